"""Validate + render speed for generated landing zones: many partitions, many nodes.

Not a test (no timing assertions anywhere): run it by hand or in CI and read the table.

    .venv/bin/python benchmarks/render_bench.py [--repeat 5]

Rendering works per partition, never per node, so time should grow with the partition count and stay flat
as max_nodes grows. Each case: parse + model (load_config_text), config rules (check_config), DeploymentPlan
(build_plan: every template, cloud-init, CycleCloud cluster), serialised output files (output_files).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from hpclz.config.loader import load_config_text
from hpclz.render.build import build_plan
from hpclz.render.writer import output_files
from hpclz.services.validate import check_config

SIZES = ("Standard_ND96isr_H100_v5", "Standard_HB176rs_v4", "Standard_HX176rs", "Standard_F72s_v2")
CASES = ((8, 10_000), (16, 10_000), (64, 10_000), (64, 1_000))

HEADER = """\
schema_version: 1
metadata: {name: bench, environment: prod, location: eastus2, tags: {owner: bench, costCenter: "1"}}
organization: {naming: {unique_suffix: b1}}
identity:
  groups: {admins: [53f5840a-6a69-4e27-ab39-b50a1723b1fb], users: [6e666e94-4aa7-495a-b3c5-ef894ff99311]}
  ssh_public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPQCRoh/Vm/Zs0dd7uqdjXH7pxOWiGPD8COa+7ZekfxX bench
network:
  vnet:
    mode: new
    address_space: [10.0.0.0/12]
    subnets:
      admin: {cidr: 10.0.0.0/24}
      bastion: {name: AzureBastionSubnet, cidr: 10.0.1.0/26}
      private_endpoints: {cidr: 10.0.1.64/26}
      lustre: {cidr: 10.0.2.0/24}
      compute: {cidr: 10.1.0.0/16}
storage:
  lustre: {mode: new, sku: AMLFS-Durable-Premium-250, capacity_tib: 48, hsm: {container: datasets}}
  blob: {mode: new, containers: [{name: datasets, purpose: datasets}, {name: checkpoints, purpose: checkpoints}]}
maintenance: {window: {start: "2026-01-04 02:00"}}
compute:
  partitions:
"""


def config_text(partitions: int, nodes: int) -> str:
    lines = [HEADER.rstrip("\n")]
    for index in range(partitions):
        count = nodes // partitions + (1 if index < nodes % partitions else 0)
        size = SIZES[index % len(SIZES)]
        gpu = "H100" in size
        lines.append(f"    - name: p{index:03d}")
        lines.append(f"      vm_size: {size}")
        lines.append(f"      max_nodes: {count}")
        lines.append(f"      infiniband: {str(size != 'Standard_F72s_v2').lower()}")
        if gpu:
            lines.append("      gpu_clocks: max")
            lines.append("      nvme_scratch: {enabled: true}")
        if size == "Standard_F72s_v2":
            lines.append("      priority: spot")
        if index == 0:
            lines.append("      default: true")
    return "\n".join(lines) + "\n"


def timed(step: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = step()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def run_case(partitions: int, nodes: int, repeat: int) -> dict[str, Any]:
    text = config_text(partitions, nodes)

    def everything() -> Any:
        loaded = load_config_text(text, "bench.yaml")
        check_config(loaded)
        plan = build_plan(loaded.config)
        return output_files(plan)

    total, files = timed(everything, repeat)
    loaded = load_config_text(text, "bench.yaml")
    validate_s, _ = timed(lambda: check_config(load_config_text(text, "bench.yaml")), repeat)
    render_s, _ = timed(lambda: output_files(build_plan(loaded.config)), repeat)
    return {
        "partitions": partitions,
        "nodes": nodes,
        "validate_s": validate_s,
        "render_s": render_s,
        "total_s": total,
        "bytes": sum(len(t) for t in files.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per case; the median is reported")
    args = parser.parse_args()
    run_case(2, 10, 1)  # warm-up: Jinja compiles each template once per process
    print(f"{'partitions':>10} {'nodes':>7} {'validate s':>11} {'render s':>9} {'total s':>8} {'output KiB':>11}")
    for partitions, nodes in CASES:
        r = run_case(partitions, nodes, args.repeat)
        print(
            f"{r['partitions']:>10} {r['nodes']:>7} {r['validate_s']:>11.3f} {r['render_s']:>9.3f} "
            f"{r['total_s']:>8.3f} {r['bytes'] / 1024:>11.0f}"
        )


if __name__ == "__main__":
    main()
