"""The gate as slurmd's real Prolog: a faulty node is drained and its job goes elsewhere; a hung agent costs the
check, not the job (tests/support/slurm_gate.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require
from tests.support.slurm import LocalSlurm, slurm_available, start_cluster, stop_cluster
from tests.support.slurm_gate import GateHooks, plant, prolog_runs
from tests.verify.helpers import FAULTS

NODES = ["g1", "g2", "g3"]
pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def gated() -> Iterator[LocalSlurm]:
    require(slurm_available(), "Slurm (slurmctld, slurmd, munged, sinfo)")
    cluster = start_cluster(NODES, power=GateHooks(NODES, budget_s=15))  # type: ignore[arg-type]
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


def wait(what: str, ready: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout} s")


def node(cluster: LocalSlurm, name: str) -> tuple[str, str]:
    state, reason = cluster.client("sinfo", "-h", "-N", "-n", name, "-o", "%T|%E").strip().split("|", 1)
    return state, reason


def job_of(cluster: LocalSlurm, job: str) -> list[dict[str, object]]:
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
