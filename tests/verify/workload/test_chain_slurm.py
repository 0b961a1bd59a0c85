"""The training proof on a real Slurm: the whole command with the CPU stand-in, and a chain that breaks."""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from hpclz.slurm.client import SlurmClient
from hpclz.verify.collective_job import THROTTLE_NODE, THROTTLE_S
from hpclz.verify.model import Status
from hpclz.verify.workload import chain
from hpclz.verify.workload.expectations import for_gpu
from hpclz.verify.workload.scripts import WorkloadPlan
from hpclz.verify.workload.shape import GPTShape
from tests.conftest import REPO, CliResult
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm
from tests.verify.test_dispatch_slurm import GOOD, XID79, plant

pytestmark = [pytest.mark.slurm, pytest.mark.slow]
slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm

TINY = GPTShape(layers=2, hidden=32, heads=2, seq_length=32, vocab=256, micro_batch=4, global_batch=4)


@pytest.fixture
def cluster_env(clean_slurm: LocalSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LocalSlurm:
    for key, value in clean_slurm.job_env.items():  # sbatch exports this process's environment to the jobs
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HPCLZ_VERIFY_FIXTURES", str(tmp_path / "readings"))
    monkeypatch.setenv("HPCLZ_VERIFY_MASTER_ADDR", "127.0.0.1")  # node1..4 are names only Slurm knows
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    return clean_slurm


@pytest.mark.timeout(420)
def test_verify_workload_trains_on_the_healthy_nodes_names_the_slow_one_and_drains_it(
    cluster_env: LocalSlurm, run_cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # node4 fails its health checks (Xid 79) and is never trained on; node3 is healthy but trains slowly.
    plant(tmp_path / "readings", {"node1": GOOD, "node2": GOOD, "node3": GOOD, "node4": XID79})
    monkeypatch.setenv(THROTTLE_NODE, "node3")
    monkeypatch.setenv(THROTTLE_S, "0.3")  # far above a tiny model's step on loopback, even on a busy host
    junit, work = tmp_path / "verify.xml", tmp_path / "w"
    docs = REPO / "docs" / "verify-node.md"  # a small corpus keeps the CPU runs short
    args = ["verify", str(REPO / "configs" / "ai-training.yaml"), "-p", "gpu", "--slurm-conf", os.environ["SLURM_CONF"]]
    args += ["--python", sys.executable, "--work-dir", str(work), "--drain", "--junit", str(junit), "-o", "json"]
    args += ["--workload", "--workload-engine", "cpu", "--workload-iters", "24", "--workload-data", str(docs)]
    result = run_cli(*args)
    assert result.exit_code == 6, result.stderr
    body = json.loads(result.stdout)["result"]
    proof = body["workload"]
    assert proof["steps"] == {"prepare": "COMPLETED", "preprocess": "COMPLETED"}
    assert [r["name"] for r in proof["runs"]] == ["train-node1", "train-node2", "train-node3", "train-all"]
    assert all(r["iterations"] == 24 and r["loss_last"] < r["loss_first"] for r in proof["runs"])
    assert all(r["mfu"] is None for r in proof["runs"])  # a CPU is never judged against a GPU's peak
    assert sorted(body["bad_nodes"]) == ["node3", "node4"]
    assert body["bad_nodes"]["node3"][0].startswith("HPCLZ-VFY-952 Training throughput per node: node3: ")
    assert "node3" in body["drained"] and "node4" in body["drained"]
    scaling = next(c for c in proof["checks"] if c["check_id"] == "HPCLZ-VFY-953")
    assert scaling["status"] == "fail"  # every step of the all-node run waits for node3
    reasons = dict(
        line.split("|", 1) for line in cluster_env.client("sinfo", "-h", "-N", "-p", "gpu", "-o", "%N|%E").splitlines()
    )
    assert reasons["node3"].startswith("hpclz: HPCLZ-VFY-952 node3: ")
    suite = next(s for s in ET.parse(junit).getroot() if s.get("name") == "training proof")
    assert int(suite.get("failures") or 0) >= 2
    data = work / "workload-gpu" / "data"
    assert (data / "corpus_ids.jsonl").stat().st_size > 0 and (data / "proof_text_document.tokens").stat().st_size > 0


@pytest.mark.timeout(120)
def test_a_failed_step_stops_the_chain_and_nothing_is_left_queued(cluster_env: LocalSlurm, tmp_path: Path) -> None:
    client = SlurmClient(conf=cluster_env.conf)
    bad = tmp_path / "broken.jsonl"
    bad.write_text("{not json\n")
    plan = WorkloadPlan(work_dir=tmp_path / "w", shape=TINY, mode="standin", train_iters=20, python=sys.executable)
    judged = chain.run(client, plan, ["node1", "node2"], for_gpu(None), partition="gpu", inputs=[bad])
    steps = judged.report.steps
    assert steps["prepare"] == "FAILED"
    assert steps["preprocess"].startswith("CANCELLED")
    failed = [c for c in judged.report.checks if c.status is Status.FAIL]
    assert failed[0].check_id == "HPCLZ-VFY-950" and "prepare FAILED" in failed[0].message
    assert client.run("squeue", "-h", "-o", "%i").strip() == ""  # no job waits forever on a dead dependency
