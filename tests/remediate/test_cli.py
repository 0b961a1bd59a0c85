"""`hpclz nodes repair|incidents`: the gate's spooled report in, a node drained, repaired through the ARM stand-in,
checked by a real Slurm job and returned, the incident and its events out, in JSON and for people."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hpclz.verify.agent import FIXTURES_ENV
from tests.conftest import REPO, CliResult
from tests.support import slurm as harness
from tests.support.arm_standin import ArmStandIn
from tests.support.remediation import FAULTS, GOOD, report_of
from tests.support.slurm import LocalSlurm
from tests.verify.test_remote import CLUSTER, COMPUTE_RG

slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm
Run = Callable[..., CliResult]


@pytest.fixture
def world(
    clean_slurm: LocalSlurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ArmStandIn, Path]]:
    readings = tmp_path / "readings"
    (readings / "node2").mkdir(parents=True)
    (readings / "fixtures.base").write_text(str(GOOD))
    (readings / "node2" / "fixtures.base").write_text(str(FAULTS / "nvsmi-hung"))
    monkeypatch.setenv(FIXTURES_ENV, str(readings))  # the post-repair check's job reads these
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as arm:
        for node in clean_slurm.nodes:
            arm.compute.add(COMPUTE_RG, node, {"ClusterName": CLUSTER, "Name": node})
        # the restart clears the hung nvidia-smi, as a reboot of the VM would
        arm.repairs.on_action = lambda _rid, _action: shutil.rmtree(readings / "node2")
        yield arm, readings


@pytest.mark.timeout(240)
def test_repair_takes_a_spooled_fault_to_a_returned_node(
    world: tuple[ArmStandIn, Path], clean_slurm: LocalSlurm, run_cli: Run, tmp_path: Path
) -> None:
    _arm, readings = world
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "node2-1.json").write_text(report_of("node2", readings / "node2").model_dump_json())
    zone = REPO / "configs" / "ai-training.yaml"
    common = ["--state-dir", str(tmp_path / "state"), "--slurm-conf", str(clean_slurm.conf)]
    args = [*common, "--resource-group", COMPUTE_RG, "--python", sys.executable, "--max-out", "50"]

    dry = run_cli("nodes", "repair", str(zone), *args, "--spool", str(spool), "--dry-run", "-o", "json")
    assert dry.exit_code == 0, dry.stderr
    assert json.loads(dry.stdout)["result"]["incidents"] == [] and (spool / "node2-1.json").exists()

    done = run_cli("nodes", "repair", str(zone), *args, "--spool", str(spool), "-o", "json")
    assert done.exit_code == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    [incident] = result["incidents"]
    assert result["opened"] == [incident["id"]]
    assert (incident["node"], incident["stage"], incident["actions_done"]) == ("node2", "returned", ["reboot"])
    assert incident["category"] == "Resource.Hpc.Unhealthy.UnhealthyGPUNvidiasmi"
    assert [e["stage_to"] for e in result["events"]] == ["drained", "acting", "checking", "returning", "returned"]
    assert list(spool.iterdir()) == [spool / "node2-1.json.seen"]
    clean_slurm.wait_idle(["node2"], timeout=30)  # idle* for a moment: slurmctld pings a resumed node first

    shown = run_cli("nodes", "incidents", *common[:2])
    assert shown.exit_code == 0, shown.stderr
    assert f"{incident['id']}  node2  returned" in shown.stdout and "0 open, 1 closed incident(s)" in shown.stdout


def test_incidents_without_state_is_one_line(run_cli: Run, tmp_path: Path) -> None:
    done = run_cli("nodes", "incidents", "--state-dir", str(tmp_path))
    assert done.exit_code != 0
    assert done.stderr.strip() == f"error: {tmp_path / 'state.json'}: no remediation state here"
