"""How long `hpclz verify` fan-out takes: through the localhost Slurm for 1-3 nodes, and the dispatcher's own
work (batching, scripts, selection, reading results, pair analysis) for large synthetic clusters, no Slurm.

    .venv/bin/python benchmarks/verify_fanout.py [--repeats 3] [--no-slurm]

Prints a table; nothing asserts on it. The Slurm figures include sbatch, scheduling, srun, the node
command and squeue polling (every 0.25 s), so they are an upper bound on the dispatcher's overhead. The
localhost cluster runs with SchedulerParameters=batch_sched_delay=0,sched_min_interval=0; stock settings add
about 2.5 s between submit and allocation (measured on this harness), the same for 1 node or 100.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hpclz.config.loader import load_config  # noqa: E402
from hpclz.slurm.client import NodeInfo, SlurmClient  # noqa: E402
from hpclz.verify.collective_job import analyse_pairs, ring_pairs  # noqa: E402
from hpclz.verify.dispatch import FanOut, batches, fan_out, node_script, read_node, select  # noqa: E402
from hpclz.verify.model import BandwidthPoint, CheckResult, CollectiveResult, NodeReport, Status  # noqa: E402
from hpclz.verify.session import agent_command  # noqa: E402

GOOD = REPO / "tests" / "verify" / "fixtures" / "h200-good"
TRIVIAL = ["bash", "-c", 'echo \'{"node": "x", "checks": []}\'']


def median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def through_slurm(repeats: int) -> list[tuple[str, str]]:
    from tests.support.slurm import start_cluster, stop_cluster

    cluster = start_cluster(["node1", "node2", "node3"])
    rows = []
    try:
        os.environ.update(cluster.job_env)
        client = SlurmClient(conf=cluster.conf)
        readings = cluster.root / "readings"
        for node in cluster.nodes:
            (readings / node).mkdir(parents=True)
            (readings / node / "fixtures.base").write_text(os.path.relpath(GOOD, readings / node))
        os.environ["HPCLZ_VERIFY_FIXTURES"] = str(readings)
        agent = agent_command(load_config(REPO / "configs" / "ai-training.yaml").config, sys.executable, None, False)
        for label, command in (("trivial command", TRIVIAL), ("node agent (fixtures)", agent)):
            for count in (1, 2, 3):
                once = partial(_fan_out_once, client, cluster.root, cluster.nodes[:count], command)
                rows.append((f"slurm fan-out, {label}, {count} node(s)", f"{median_s(once, repeats):.2f} s"))
        split = partial(_fan_out_once, client, cluster.root, cluster.nodes, TRIVIAL, 1)
        rows.append(("slurm fan-out, trivial command, 3 nodes as 3 jobs of 1", f"{median_s(split, repeats):.2f} s"))
    finally:
        stop_cluster(cluster)
    return rows


def _fan_out_once(client: SlurmClient, root: Path, nodes: list[str], command: list[str], per_job: int = 100) -> None:
    work = root / f"run-{time.monotonic_ns()}"
    plan = FanOut(command=command, work_dir=work, node_budget_s=60, max_nodes_per_job=per_job)
    reports = fan_out(client, nodes, plan)
    assert len(reports) == len(nodes)


def synthetic(repeats: int) -> list[tuple[str, str]]:
    rows = []
    for count in (100, 1_000, 10_000):
        names = [f"gpu{i:05d}" for i in range(count)]
        drained = {n for i, n in enumerate(names) if i % 50 == 0}
        infos = [NodeInfo(n, "drained", "hpclz: x") if n in drained else NodeInfo(n, "idle") for n in names]
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            _write_results(folder, names)
            plan = partial(_plan, infos, names, folder)
            rows.append((f"select + batch + scripts, {count} nodes", f"{median_s(plan, repeats) * 1e3:.1f} ms"))
            collect = partial(_collect, folder, names)
            rows.append((f"read every node's result, {count} nodes", f"{median_s(collect, repeats) * 1e3:.1f} ms"))
        analyse = partial(analyse_pairs, _pairs(names))
        rows.append((f"ring-pair analysis, {count} pairs", f"{median_s(analyse, repeats) * 1e3:.1f} ms"))
    return rows


def _write_results(folder: Path, names: list[str]) -> None:
    checks = [CheckResult(check_id=f"HPCLZ-VFY-{i:03d}", title="t", status=Status.PASS) for i in range(15)]
    report = NodeReport(node="x", checks=checks).model_dump_json()
    for n in names:
        (folder / f"{n}.rc").write_text("0\n")
        (folder / f"{n}.report.json").write_text(report)


def _plan(infos: list[NodeInfo], names: list[str], folder: Path) -> None:
    select(infos, drain=True)
    batches(names, 100)
    node_script(TRIVIAL, folder, 600)


def _collect(folder: Path, names: list[str]) -> None:
    for n in names:
        read_node(folder, n, 600)


def _pairs(names: list[str]) -> list[CollectiveResult]:
    point = BandwidthPoint(size_bytes=8 << 30, time_us=1.0, algbw_gbps=1.0, busbw_gbps=370.0)
    return [
        CollectiveResult(name=f"pair-{a}-{b}", nodes=[a, b], backend="nccl", ranks=16, points=[point])
        for a, b in ring_pairs(names)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-slurm", action="store_true", help="only the synthetic part")
    args = parser.parse_args()
    rows = synthetic(args.repeats)
    if not args.no_slurm:
        rows += through_slurm(args.repeats)
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  median of {args.repeats}")
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


if __name__ == "__main__":
    main()
