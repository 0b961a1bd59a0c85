"""The health gate under load: slurmd runs hpclz's gate as its real Prolog on a localhost cluster
(tests/support/slurm_gate.py) while jobs stream in, slow and hung agents are injected, and faults are planted.

    .venv/bin/python benchmarks/gate_bench.py [--jobs 300] [--nodes 4] [--budget 3] [--seed 1]

Reports, nothing asserts:
- prolog wall time (as the prolog script itself measured it, `date` before and after): median, p99, max, against
  the budget and PrologEpilogTimeout; and how many prologs Slurm timed out (must be 0);
- jobs whose script ran on a node after a fault was planted on it (must be 0: the fault is found by the prolog of
  the first job that lands there, which is then requeued);
- time from planting a fault to the node showing drained in sinfo.
Faults come from tests/verify/fixtures/h200-faults (each caught by one verify check); a slow agent sleeps
uniformly between 0 and 2 x budget before reading, so about half of them overrun and are killed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.slurm import LocalSlurm, start_cluster, stop_cluster  # noqa: E402
from tests.support.slurm_gate import PROLOG_TIMEOUT_S, GateHooks, plant, prolog_runs  # noqa: E402

FAULTS = REPO / "tests" / "verify" / "fixtures" / "h200-faults"
FAULT_KINDS = ["xid79", "ib-port-down", "gpu-missing", "row-remap-failure", "nvlink-down"]


def sinfo(cluster: LocalSlurm) -> dict[str, tuple[str, str]]:
    out = cluster.client("sinfo", "-h", "-N", "-o", "%N|%T|%E")
    rows = (line.split("|", 2) for line in out.splitlines() if line.strip())
    return {n: (s, r) for n, s, r in rows}


def submit(cluster: LocalSlurm, work: Path, i: int) -> str:
    script = work / "job.sh"
    if not script.exists():
        script.write_text(f'#!/bin/bash\necho "$SLURM_JOB_ID $SLURMD_NODENAME $(date +%s.%N)" >> {work / "ran.log"}\n')
    return cluster.client(
        "sbatch", "--parsable", f"--job-name=b{i}", f"--output={work}/out-%j.txt", "--time=1", str(script)
    ).strip()


def run(jobs: int, nodes: int, budget: float, seed: int) -> None:
    rng = random.Random(seed)
    names = [f"b{i}" for i in range(1, nodes + 1)]
    cluster = start_cluster(names, power=GateHooks(names, budget_s=budget))  # type: ignore[arg-type]
    work = Path(tempfile.mkdtemp(prefix="hpclz-gate-bench-"))
    bench = Bench(cluster)
    started = time.monotonic()
    try:
        for i in range(jobs):
            node = rng.choice(names)
            if node not in bench.planted:
                roll = rng.random()
                if roll < 0.05:
                    bench.plant_fault(node, FAULTS / rng.choice(FAULT_KINDS))
                else:
                    plant(cluster.root, node, delay_s=rng.uniform(0, 2 * budget) if roll < 0.35 else None)
            submit(cluster, work, i)
            bench.tend()
            time.sleep(0.05)
        deadline = time.monotonic() + 600
        while cluster.client("squeue", "-h", "-t", "PD,R,CG").strip() and time.monotonic() < deadline:
            bench.tend()
            time.sleep(0.3)
        report(cluster, work, budget, bench, time.monotonic() - started)
    finally:
        stop_cluster(cluster)


class Bench:
    """Plants faults, and plays the repair loop: a drained node has its fault cleared and is resumed."""

    def __init__(self, cluster: LocalSlurm):
        self.cluster = cluster
        self.planted: dict[str, float] = {}
        self.faults = 0
        self.drained_after: list[float] = []
        self.repaired: list[tuple[str, float]] = []

    def plant_fault(self, node: str, fault: Path) -> None:
        plant(self.cluster.root, node, fault)
        self.planted[node] = time.time()
        self.faults += 1

    def tend(self) -> None:
        for name, (state, _reason) in sinfo(self.cluster).items():
            if not state.startswith("drain"):
                continue
            if name in self.planted:
                self.drained_after.append(time.time() - self.planted.pop(name))
            plant(self.cluster.root, name)
            self.repaired.append((name, time.time()))
            self.cluster.client("scontrol", "update", f"NodeName={name}", "State=RESUME")
        held = self.cluster.client("squeue", "-h", "-t", "PD", "-o", "%i|%r")
        for line in held.splitlines():
            job, reason = line.split("|", 1)
            if "held" in reason.lower():
                self.cluster.client("scontrol", "release", job)


def report(cluster: LocalSlurm, work: Path, budget: float, bench: Bench, wall: float) -> None:
    runs = prolog_runs(cluster.root)
    durations = sorted(float(r["ended"]) - float(r["started"]) for r in runs)  # type: ignore[arg-type]
    p99 = durations[min(len(durations) - 1, int(0.99 * len(durations)))]
    log = work / "ran.log"
    ran = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    ctld = (cluster.root / "log" / "slurmctld.log").read_text()
    timeouts = sum(1 for line in ctld.splitlines() if "prolog" in line.lower() and "time" in line.lower())
    failed = sum(1 for r in runs if r["status"] != 0)
    said = (cluster.root / "gate" / "prolog.out").read_text().splitlines()
    inconclusive = sum(1 for line in said if "inconclusive" in line)
    print(
        f"jobs run {len(ran)}, prologs {len(runs)} ({failed} failed: a fault found; {inconclusive} inconclusive: "
        f"agent killed at the budget, job ran, node drained for a re-test), wall {wall:.0f} s"
    )
    print(
        f"prolog s: median {statistics.median(durations):.2f}, p99 {p99:.2f}, max {durations[-1]:.2f}; "
        f"budget {budget:g} s, PrologEpilogTimeout {PROLOG_TIMEOUT_S} s; prolog timeouts in slurmctld.log: {timeouts}"
    )
    print(
        f"faults planted {bench.faults}; jobs started on a node after its fault was seen: {bad_starts(runs, ran, bench)}"
    )
    if bench.drained_after:
        print(
            f"fault planted -> node drained s (sinfo polled between submits): "
            f"median {statistics.median(bench.drained_after):.2f}, max {max(bench.drained_after):.2f}"
        )


def bad_starts(runs: list[dict[str, object]], ran: list[list[str]], bench: Bench) -> int:
    """Jobs whose script started on a node after a prolog there found a fault, and before that node's repair. The
    fault is seen during that prolog (the gate drains before it exits), so a repair counts from the prolog's start:
    the bench may resume the node before the prolog script has written its own end time."""
    seen = [(str(r["node"]), float(r["started"])) for r in runs if r["status"] != 0]  # type: ignore[arg-type]
    bad = 0
    for _job, node, when in ran:
        t = float(when)
        for fault_node, fault_at in seen:
            repaired = any(n == node and fault_at <= r <= t for n, r in bench.repaired)
            if fault_node == node and fault_at <= t and not repaired:
                bad += 1
    return bad


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--budget", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    run(args.jobs, args.nodes, args.budget, args.seed)


if __name__ == "__main__":
    main()
