"""The post-repair check as a real Slurm job on the drained node, inside a maintenance reservation."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hpclz.remediate.engine import FAIL, INCONCLUSIVE, PASS
from hpclz.remediate.recheck import SlurmRecheck
from hpclz.slurm.client import REPAIR_PREFIX, SlurmClient
from hpclz.verify.agent import FIXTURES_ENV
from hpclz.verify.bundle import build
from hpclz.verify.dispatch import NO_AGENT, RESULT_PLACEHOLDER, node_code
from tests.support import slurm as harness
from tests.support.remediation import FAULTS, GOOD
from tests.support.slurm import LocalSlurm

slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm


@pytest.mark.parametrize(("reads", "outcome"), [(GOOD, PASS), (FAULTS / "ib-port-down", FAIL)])
def test_the_check_runs_on_the_held_node_and_leaves_it_held(
    reads: Path, outcome: str, clean_slurm: LocalSlurm, tmp_path: Path
) -> None:
    readings = tmp_path / "readings"
    (readings / "node2").mkdir(parents=True)
    (readings / "fixtures.base").write_text(str(GOOD))
    (readings / "node2" / "fixtures.base").write_text(str(reads))
    client = SlurmClient(conf=clean_slurm.conf, extra_env={**clean_slurm.job_env, FIXTURES_ENV: str(readings)})
    held = f"{REPAIR_PREFIX} 0007 HPCLZ-VFY-011 mlx5_ib3 port 1: DOWN"
    client.drain("node2", held)
    command = [sys.executable, "-m", "hpclz.verify.agent", "--tier", "health", "--json", RESULT_PLACEHOLDER]
    verdict = SlurmRecheck(client, command, tmp_path / "work", budget_s=60).check("node2")
    assert verdict.outcome == outcome
    if outcome == FAIL:
        assert [e.check_id for e in verdict.evidence] == ["HPCLZ-VFY-011"]
    [info] = client.nodes(nodelist="node2")
    assert (info.state, info.reason) == ("drained", held)
    assert "ReservationName=" not in clean_slurm.client("scontrol", "show", "reservation", "-o")


def test_a_check_whose_agent_fails_decides_nothing(clean_slurm: LocalSlurm, tmp_path: Path) -> None:
    client = SlurmClient(conf=clean_slurm.conf, extra_env=clean_slurm.job_env)
    client.drain("node3", f"{REPAIR_PREFIX} 0008 HPCLZ-VFY-001 nvidia-smi hung")
    crashed = ["bash", "-c", "echo 'GPU 0 ok'; exit 139"]  # printed a reading, then died without a report
    verdict = SlurmRecheck(client, crashed, tmp_path / "work", budget_s=60).check("node3")
    assert verdict.outcome == INCONCLUSIVE
    assert [e.check_id[:11] for e in verdict.evidence] == ["HPCLZ-VFY-9"]


def test_the_check_starts_the_agent_from_the_node_bundle_and_a_node_without_it_decides_nothing(
    clean_slurm: LocalSlurm, tmp_path: Path
) -> None:
    """As on the rendered cluster: the repaired node runs python3 with the bundle under /sched (hpclz.verify.session.
    agent_code), never hpclz's venv on the scheduler; without the bundle the check is inconclusive, not a failure."""
    client = SlurmClient(conf=clean_slurm.conf, extra_env={**clean_slurm.job_env, FIXTURES_ENV: str(GOOD)})
    held = f"{REPAIR_PREFIX} 0009 HPCLZ-VFY-011 mlx5_ib3 port 1: DOWN"
    client.drain("node2", held)
    bundle = build(tmp_path / "hpclz-node.pyz")
    absent = "/opt/hpclz/venvs/" + "0" * 64 + "/bin/python"  # the scheduler's venv: not on any node
    options = ["--tier", "health", "--json", RESULT_PLACEHOLDER]
    code = node_code("hpclz.verify.agent", bundle=str(bundle), python=None, fallback=absent)
    assert SlurmRecheck(client, options, tmp_path / "work", budget_s=60, code=code).check("node2").outcome == PASS
    gone = node_code("hpclz.verify.agent", bundle=str(tmp_path / "absent.pyz"), python=None, fallback=absent)
    verdict = SlurmRecheck(client, options, tmp_path / "work", budget_s=60, code=gone).check("node2")
    assert verdict.outcome == INCONCLUSIVE and [e.check_id for e in verdict.evidence] == [NO_AGENT]
    [info] = client.nodes(nodelist="node2")
    assert (info.state, info.reason) == ("drained", held)
