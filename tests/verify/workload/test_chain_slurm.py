"""The whole proof on a real Slurm: set-up-free CPU stand-in chain, runs, a throttled node named slow."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hpclz.slurm.client import SlurmClient
from hpclz.verify.collective_job import THROTTLE_NODE, THROTTLE_S
from hpclz.verify.model import Status
from hpclz.verify.workload import chain
from hpclz.verify.workload.expectations import for_gpu
from hpclz.verify.workload.scripts import WorkloadPlan
from hpclz.verify.workload.shape import GPTShape
from tests.conftest import REPO
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm

pytestmark = [pytest.mark.slurm, pytest.mark.slow]
slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm

TINY = GPTShape(layers=2, hidden=32, heads=2, seq_length=32, vocab=256, micro_batch=4, global_batch=4)


@pytest.fixture
def client(clean_slurm: LocalSlurm, monkeypatch: pytest.MonkeyPatch) -> SlurmClient:
    for key, value in clean_slurm.job_env.items():  # sbatch exports this process's environment to the jobs
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    return SlurmClient(conf=clean_slurm.conf)


def _plan(work: Path, iters: int = 40) -> WorkloadPlan:
    # The nodes run this venv's interpreter: a bare python3 there would lack torch and hpclz.
    return WorkloadPlan(
        work_dir=work, shape=TINY, mode="standin", train_iters=iters, python=sys.executable, master_addr="127.0.0.1"
    )


@pytest.mark.timeout(300)
def test_the_chain_runs_end_to_end_and_names_the_slow_node(
    client: SlurmClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(THROTTLE_NODE, "node2")
    monkeypatch.setenv(THROTTLE_S, "0.3")  # far above a tiny model's step on loopback, even on a busy host
    docs = [REPO / "README.md", REPO / "docs" / "verify-node.md"]  # a small corpus keeps the CPU runs short
    judged = chain.run(
        client,
        _plan(tmp_path / "w", 30),
        ["node1", "node2", "node3"],
        for_gpu(None),
        partition="gpu",
        run_s=240,
        inputs=docs,
    )
    report = judged.report
    assert report.steps == {"prepare": "COMPLETED", "preprocess": "COMPLETED"}
    assert [r.name for r in report.runs] == ["train-node1", "train-node2", "train-node3", "train-all"]
    assert all(r.iterations == 30 for r in report.runs)
    # The stand-in learned something: the bytes of English prose are far from uniform.
    assert all(r.loss_last is not None and r.loss_first is not None and r.loss_last < r.loss_first for r in report.runs)
    assert list(judged.bad_nodes) == ["node2"]
    # Three ranks wait for the throttled one at every step: the all-node run scales badly, and says so.
    scaling = next(c for c in report.checks if c.check_id == "HPCLZ-VFY-953")
    assert scaling.status is Status.FAIL
    data = tmp_path / "w" / "data"
    assert (data / "corpus_ids.jsonl").stat().st_size > 0 and (data / "proof_text_document.tokens").stat().st_size > 0


@pytest.mark.timeout(120)
def test_a_failed_step_stops_the_chain_and_nothing_is_left_queued(client: SlurmClient, tmp_path: Path) -> None:
    bad = tmp_path / "broken.jsonl"
    bad.write_text("{not json\n")
    judged = chain.run(client, _plan(tmp_path / "w"), ["node1", "node2"], for_gpu(None), partition="gpu", inputs=[bad])
    steps = judged.report.steps
    assert steps["prepare"] == "FAILED"
    assert steps["preprocess"].startswith("CANCELLED")
    failed = [c for c in judged.report.checks if c.status is Status.FAIL]
    assert failed[0].check_id == "HPCLZ-VFY-950" and "prepare FAILED" in failed[0].message
    assert client.run("squeue", "-h", "-o", "%i").strip() == ""  # no job waits forever on a dead dependency
