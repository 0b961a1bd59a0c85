"""Deploy the largest preset against the ARM stand-in with modelled provisioning latencies.

Reports the wall time of the apply phase (first submit to last finish) against the critical path of
the deployment graph under the same latency model: the gap is hpclz's own overhead (polling, state
writes, scheduling). Target: within 5%. Run: .venv/bin/python benchmarks/deploy_bench.py [--scale 0.01]

Latencies are typical real provisioning times in seconds (Azure docs and experience; Bastion and
Managed Lustre dominate), multiplied by --scale. The stand-in provisions a deployment's resources
one after another, so a deployment's modelled duration is the sum over its resources.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

REAL_SECONDS = {
    "microsoft.resources/resourcegroups": 2,
    "microsoft.network/networksecuritygroups": 8,
    "microsoft.network/publicipaddresses": 5,
    "microsoft.network/natgateways": 20,
    "microsoft.network/virtualnetworks": 10,
    "microsoft.network/bastionhosts": 480,
    "microsoft.network/privatednszones": 30,
    "microsoft.network/privatednszones/virtualnetworklinks": 30,
    "microsoft.network/privateendpoints": 60,
    "microsoft.keyvault/vaults": 30,
    "microsoft.managedidentity/userassignedidentities": 5,
    "microsoft.authorization/roleassignments": 5,
    "microsoft.storage/storageaccounts": 30,
    "microsoft.storagecache/amlfilesystems": 900,
    "microsoft.compute/virtualmachines": 120,
    "microsoft.network/networkinterfaces": 5,
    "microsoft.operationalinsights/workspaces": 20,
}
DEFAULT_SECONDS = 3


def largest_preset() -> Path:
    from hpclz.config.loader import load_config
    from hpclz.render.build import build_plan

    sizes = {}
    for path in sorted((REPO / "configs").glob("*.yaml")):
        plan = build_plan(load_config(path).config)
        sizes[path] = sum(len(d.resources()) for d in plan.deployments)
    return max(sizes, key=lambda p: sizes[p])


def modelled(plan, latency: dict[str, float]) -> dict[str, float]:  # type: ignore[no-untyped-def]
    from hpclz.deploy.records import _declared

    return {
        d.name: sum(latency.get(str(r.get("type", "")).lower(), latency["*"]) for r in _declared(d.template))
        for d in plan.deployments
    }


def critical_path(plan, durations: dict[str, float]) -> float:  # type: ignore[no-untyped-def]
    finish: dict[str, float] = {}
    for wave in plan.waves():
        for d in wave:
            finish[d.name] = max((finish[x] for x in d.depends_on), default=0.0) + durations[d.name]
    return max(finish.values())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=0.01, help="model seconds per real second")
    parser.add_argument("--poll", type=float, default=0.05, help="hpclz polling interval, seconds")
    args = parser.parse_args()

    from tests.support.arm_standin import ArmStandIn

    from hpclz.config.loader import load_config
    from hpclz.render.build import build_plan

    preset = largest_preset()
    workdir = Path(tempfile.mkdtemp(prefix="hpclz-bench-"))
    config = workdir / "zone" / preset.name
    config.parent.mkdir()
    shutil.copy(preset, config)
    plan = build_plan(load_config(config).config)
    latency = {k: v * args.scale for k, v in REAL_SECONDS.items()} | {"*": DEFAULT_SECONDS * args.scale}
    durations = modelled(plan, latency)
    path = critical_path(plan, durations)

    marks: list[tuple[float, str, str]] = []
    with ArmStandIn(workdir / "standin") as arm:
        os.environ.update(arm.env(poll_interval=args.poll))
        arm.world.latency.update(latency)
        from hpclz.services.deploy import DeployOptions, deploy

        started = time.perf_counter()
        result = deploy(
            DeployOptions(
                Path(config), on_event=lambda e: marks.append((time.perf_counter(), str(e.step), e.deployment))
            )
        )
        total = time.perf_counter() - started
        arm_side = {run.name: (run.began, run.ended or run.began) for run in arm.world.deployments.values()}
    if not result.ok:
        print(f"deploy failed: {[d.error for d in result.payload.deployments if d.error]}")
        return 1
    first = min(t for t, step, _ in marks if step == "submitted")
    last = max(t for t, step, _ in marks if step == "succeeded")
    wall = last - first
    print(
        f"preset: {preset.name}; deployments: {len(plan.deployments)}; resources: {sum(len(d.resources()) for d in plan.deployments)}"
    )
    print(f"scale {args.scale} model-s per real s, poll {args.poll}s")
    seen = {(name, step): t for t, step, name in marks}
    print(f"  {'deployment':40} {'model':>6} {'ARM ran':>8} {'submit lag':>10} {'notice lag':>10}")
    for d in plan.deployments:
        began, ended = arm_side[d.name]
        ready = max((seen[(x, "succeeded")] for x in d.depends_on), default=first)
        print(
            f"  {d.name:40} {durations[d.name]:6.2f} {ended - began:8.2f} "
            f"{began - ready:10.3f} {seen[(d.name, 'succeeded')] - ended:10.3f}"
        )
    print("  (submit lag: dependencies done -> ARM starts; notice lag: ARM done -> hpclz records success)")
    print(f"critical path (model): {path:6.2f}s")
    print(f"apply wall time      : {wall:6.2f}s  ({(wall / path - 1) * 100:+.1f}% vs critical path)")
    print(f"whole command        : {total:6.2f}s  (validate, render, preflight, apply)")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
