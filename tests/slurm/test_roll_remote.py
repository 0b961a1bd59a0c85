"""`hpclz nodes roll|status --via run-command` from the machine that deployed: on the tagged scheduler VM through a
managed Run Command (the ARM stand-in runs the script here, against the power-saving Slurm cluster, as the VM's
agent would), the envelope back through a blob on Azurite. The same parts remote verify uses (tests/verify/
test_remote.py): CycleCloud's tags (ClusterName, Name=scheduler), the config as a protected parameter.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.slurm.test_roll import zone_with
from tests.support.arm_standin import ArmStandIn
from tests.support.azurite import Azurite, azurite  # noqa: F401  (a fixture, used by name)
from tests.support.slurm import LocalSlurm
from tests.support.slurm_power import power_cluster, suspended
from tests.verify.test_remote import CLUSTER, COMPUTE_RG, record_compute_group

__all__ = ["power_cluster"]

Run = Callable[..., CliResult]


@pytest.fixture
def scheduler(
    power_cluster: LocalSlurm,
    azurite: Azurite,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[ArmStandIn]:
    for key, value in power_cluster.job_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HPCLZ_STATE_CONNECTION_STRING", azurite.connection_string)
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as arm:
        arm.compute.vm_env = {k: v for k, v in os.environ.items() if not k.startswith("HPCLZ_ARM")}
        arm.compute.add(COMPUTE_RG, f"{CLUSTER}-scheduler", {"ClusterName": CLUSTER, "Name": "scheduler"})
        for key in power_cluster.job_env:  # only the run on the scheduler may reach Slurm
            monkeypatch.delenv(key, raising=False)
        yield arm


def _remote(run_cli: Run, zone: Path, verb: str, *args: str) -> CliResult:
    return run_cli("nodes", verb, str(zone), "--via", "run-command", "--python", sys.executable, *args)


@pytest.mark.timeout(180)
def test_roll_and_status_run_on_the_tagged_scheduler(
    scheduler: ArmStandIn, power_cluster: LocalSlurm, run_cli: Run, tmp_path: Path
) -> None:
    zone = zone_with(tmp_path, "hpc", "static")
    record_compute_group(zone)
    rolled = _remote(run_cli, zone, "roll", "-p", "hpc", "-w", "cc3", "-o", "json")
    assert rolled.exit_code == 0, rolled.stderr
    envelope = json.loads(rolled.stdout)
    assert envelope["command"] == "nodes roll"
    [node] = envelope["result"]["nodes"]
    assert node["name"] == "cc3" and node["reason"] == "hpclz: roll: new node definition"
    assert f"virtualMachines/{CLUSTER}-scheduler" in rolled.stderr
    [script] = scheduler.compute.scripts
    assert "nodes roll" in script and "--via slurm" in script and "HPCLZ_VERIFY_CONFIG_B64" in script
    assert "aitrain" not in script  # the config rides as a protected parameter, not in the script
    assert scheduler.compute.commands == {}  # deleted after the run

    followed = _remote(run_cli, zone, "status", "-p", "hpc", "-w", "cc3", "--wait", "60")
    assert followed.exit_code == 0, followed.stderr
    assert "cc3" in followed.stdout and "powered down" in followed.stdout
    assert "cc3" in suspended(power_cluster)


def test_a_refusal_on_the_scheduler_comes_back_as_its_one_line(
    scheduler: ArmStandIn, power_cluster: LocalSlurm, run_cli: Run, tmp_path: Path
) -> None:
    zone = zone_with(tmp_path, "hpc", "static")
    record_compute_group(zone)
    before = power_cluster.node_states()
    done = _remote(run_cli, zone, "roll", "-p", "hpc", "-w", "cc5")
    assert done.exit_code == 64
    assert "error: on the scheduler: cannot roll 1 node(s), nothing was changed: cc5: SuspendExcNodes" in done.stderr
    assert power_cluster.node_states() == before


def test_without_slurm_here_or_a_deployment_it_says_why_it_went_to_azure(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No slurm.conf, no Slurm tools on PATH and nothing deployed: one line, and the hint names the way out."""
    for key in ("SLURM_CONF", "HPCLZ_SLURM_BIN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no sinfo
    zone = zone_with(tmp_path, "hpc", "static")
    done = run_cli("nodes", "status", str(zone), "-p", "hpc")
    assert done.exit_code != 0 and "Traceback" not in done.stderr
    assert "went to the scheduler VM through Azure Run Command; --slurm-conf FILE uses a Slurm here" in done.stderr
