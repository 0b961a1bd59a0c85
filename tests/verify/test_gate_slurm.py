"""The gate as slurmd's real Prolog: a faulty node is drained and its job goes elsewhere; a hung agent costs the
check, not the job (tests/support/slurm_gate.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import require
from tests.support.slurm import LocalSlurm, slurm_available, start_cluster, stop_cluster
from tests.support.slurm_gate import REQUEUE_WAIT_S, GateHooks, PrologRun, plant, prolog_runs
from tests.verify.helpers import FAULTS

NODES = ["g1", "g2", "g3"]
pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def gated() -> Iterator[LocalSlurm]:
    require(slurm_available(), "Slurm (slurmctld, slurmd, munged, sinfo)")
    cluster = start_cluster(NODES, power=GateHooks(NODES, budget_s=15))
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


def submit(cluster: LocalSlurm, tmp_path: Path, node: str, name: str) -> tuple[str, Path]:
    marker = tmp_path / f"{name}.ran"
    script = tmp_path / f"{name}.sh"
    script.write_text(f"#!/bin/bash\necho $SLURMD_NODENAME > {marker}\n")
    job = cluster.client(
        "sbatch",
        "--parsable",
        f"--job-name={name}",
        f"--nodelist={node}",
        f"--output={tmp_path}/{name}.out",
        str(script),
    ).strip()
    return job, marker


def wait(what: str, ready: Callable[[], object], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout} s")


def node(cluster: LocalSlurm, name: str) -> tuple[str, str]:
    state, reason = cluster.client("sinfo", "-h", "-N", "-n", name, "-o", "%T|%E").strip().split("|", 1)
    return state, reason


def job_of(cluster: LocalSlurm, job: str) -> list[PrologRun]:
    return [r for r in prolog_runs(cluster.root) if r["job"] == job]


def test_a_faulty_node_is_drained_by_the_prolog_and_its_job_never_runs_there(gated: LocalSlurm, tmp_path: Path) -> None:
    gated.reset_nodes()
    plant(gated.root, "g2", FAULTS / "xid79")
    try:
        job, marker = submit(gated, tmp_path, "g2", "faulty")
        wait("the prolog's drain", lambda: node(gated, "g2")[0].startswith("drain"))
        wait("the prolog's record", lambda: job_of(gated, job))
        assert [r["status"] for r in job_of(gated, job)] == [1]
        time.sleep(2)  # give a (wrong) start of the job, or Slurm's own "Prolog error" reason, the chance to show
        assert not marker.exists()
        reason = node(gated, "g2")[1]
        assert reason.startswith("hpclz: gate prolog failed: HPCLZ-VFY-006 Xid 79"), reason
        assert gated.client("squeue", "-h", "-j", job, "-o", "%T").strip() in {"PENDING", "REQUEUED"}
    finally:
        plant(gated.root, "g2")
        gated.client("scancel", job)


def test_a_hung_agent_is_killed_at_the_budget_and_the_job_runs(gated: LocalSlurm, tmp_path: Path) -> None:
    gated.reset_nodes()
    plant(gated.root, "g3", delay_s=300)
    try:
        job, marker = submit(gated, tmp_path, "g3", "hung")
        wait("the job", marker.exists)
        [run] = job_of(gated, job)
        assert run["status"] == 0
        state, reason = node(gated, "g3")
        assert state.startswith("drain")
        assert reason == "hpclz: gate prolog inconclusive, re-test: health agent did not finish within 15 s (killed)"
    finally:
        plant(gated.root, "g3")


def test_a_failed_prolog_requeues_the_job_unheld_and_it_runs_on_another_node(gated: LocalSlurm, tmp_path: Path) -> None:
    """nohold_on_prolog_fail (slurm.conf(5) 22.05, SchedulerParameters): "the job will be requeued but not held so
    that the scheduler can dispatch it to another host". Without it the job would wait, held, for a person."""
    gated.reset_nodes()
    plant(gated.root, "g1", FAULTS / "xid79")
    try:
        marker = tmp_path / "moved.ran"
        script = tmp_path / "moved.sh"
        script.write_text(f"#!/bin/bash\necho $SLURMD_NODENAME > {marker}\n")
        # Nothing pins the job: the scheduler tries g1 first (the first node of equal weight), its prolog fails,
        # and the job must come back unheld and run on g3 (g2 excluded, so the test knows where).
        job = gated.client(
            "sbatch", "--parsable", "--job-name=moved", "--exclude=g2", f"--output={tmp_path}/m.out", str(script)
        ).strip()
        wait("the job, on another node", marker.exists, timeout=60 + REQUEUE_WAIT_S)
        assert marker.read_text().strip() == "g3"
        runs = {r["node"]: r["status"] for r in job_of(gated, job)}
        assert runs == {"g1": 1, "g3": 0}, runs
        assert node(gated, "g1")[1].startswith("hpclz: gate prolog failed: HPCLZ-VFY-006 Xid 79")
        assert "Restarts=1" in gated.client("scontrol", "show", "job", job)
    finally:
        plant(gated.root, "g1")
        gated.client("scancel", job)
