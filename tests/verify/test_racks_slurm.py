"""Rack-aware collectives through a real Slurm on localhost: one all-reduce per rack, ring pairs only inside a slow
rack, and a slow rack named as a rack. The racks are given here as Slurm's block topology would give them on a
rack-scale partition (SlurmClient.blocks, read from slurmctld 24.11 in tests/slurm/test_topology_wiring.py); this
cluster's Slurm 22.05 has no block plugin. Slowness is the collective job's fault injection (HPCLZ_VERIFY_THROTTLE_*),
gloo over loopback, one rank per node."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hpclz.config.loader import load_config
from hpclz.slurm.client import SlurmClient
from hpclz.verify import collective_job as coll
from hpclz.verify.model import Status, VerifyReport
from hpclz.verify.session import _rack_runs
from tests.conftest import REPO
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm

pytestmark = pytest.mark.slurm
slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm


@pytest.fixture
def client(clean_slurm: LocalSlurm, monkeypatch: pytest.MonkeyPatch) -> SlurmClient:
    """This process's environment is what sbatch exports to the jobs: point it at the test cluster."""
    for key, value in clean_slurm.job_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    monkeypatch.setenv(coll.THROTTLE_S, "0.2")  # far above a 1 MiB gloo all-reduce on loopback, even on a busy host
    return SlurmClient(conf=clean_slurm.conf)


def _plan(work: Path) -> coll.CollectivePlan:
    # node1..4 are names only Slurm knows: rank 0 listens on loopback.
    return coll.CollectivePlan(python=sys.executable, work_dir=work, partition="gpu", master_addr="127.0.0.1")


@pytest.mark.timeout(300)
def test_a_slow_rack_is_named_as_a_rack_and_left_out_of_the_run_across_racks(
    client: SlurmClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(coll.THROTTLE_NODE, "node3,node4")  # every node of rack B: its whole domain is slow
    racks = {"nvl_a": ["node1", "node2"], "nvl_b": ["node3", "node4"]}
    report = VerifyReport()
    config = load_config(REPO / "configs" / "ai-training.yaml").config
    blamed, out = _rack_runs(client, config, racks, ["node1", "node2", "node3", "node4"], _plan(tmp_path), report)

    assert blamed == {} and out == {"node3", "node4"}  # no node is convicted for its rack
    assert list(report.slow_racks) == ["nvl_b"]
    assert report.slow_racks["nvl_b"].startswith("rack nvl_b (2 nodes): bus bandwidth ")
    assert "(half the best rack's " in report.slow_racks["nvl_b"]
    runs = {r.name: r for r in report.collectives}
    assert sorted(runs) == ["rack-nvl_a", "rack-nvl_b"]  # a two-node rack is its own only pair: no pairs run
    assert (runs["rack-nvl_a"].status, runs["rack-nvl_b"].status) == (Status.PASS, Status.FAIL)
    assert runs["rack-nvl_b"].nodes == ["node3", "node4"]


@pytest.mark.timeout(300)
def test_inside_a_slow_rack_the_ring_pairs_convict_the_one_slow_node_instead(
    client: SlurmClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(coll.THROTTLE_NODE, "node2")
    rack = ["node1", "node2", "node3"]
    plan = _plan(tmp_path)
    (run,) = coll.run_racks(client, {"nvl_a": rack}, rack, plan)
    measured = coll.busbw(run)
    assert measured is not None
    # A per-rack threshold the slow node pulls the rack under (the size's own is for NCCL on GPUs, not gloo here).
    (slow,) = coll.analyse_racks([run], threshold=measured * 2)
    pairs = coll.run_pairs(client, slow.nodes, plan)
    blamed = coll.analyse_pairs(pairs, None)
    assert list(blamed) == ["node2"] and blamed["node2"].startswith("slow in every ring pair with it: ")
    assert coll.name_rack(slow, pairs, blamed) is None  # the node is named, not the rack
