"""Injected faults: transient ones (429, 500, dropped connection) are survived; a real failure is
reported with its code and target, and what depends on it never starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RunCli
from tests.deploy.conftest import state_of
from tests.support.arm_standin import ArmStandIn, Fault


@pytest.mark.parametrize(
    "fault",
    [
        Fault("throttle", method="PUT", path=r"/deployments/", times=1, retry_after=1),
        Fault("error", method="GET", path=r"/deployments/[^/]+$", times=3),
        Fault("drop", method="PUT", path=r"/deployments/", times=1),
        Fault("drop", method="GET", path=r"/operations$", times=2),
    ],
    ids=["429-on-submit", "500-on-poll", "dropped-submit", "dropped-operations-list"],
)
def test_transient_faults_are_survived(arm: ArmStandIn, zone: Path, run_cli: RunCli, fault: Fault) -> None:
    arm.faults.add(fault)
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr + result.stdout
    assert fault.fired == fault.times
    assert all(d["status"] == "succeeded" for d in state_of(zone)["deployments"].values())


def _dependants_of(zone: Path, name: str) -> set[str]:
    from hpclz.config.loader import load_config
    from hpclz.render.build import build_plan

    plan = build_plan(load_config(zone).config)
    found: set[str] = set()
    for wave in plan.waves():
        found |= {d.name for d in wave if {name, *found} & set(d.depends_on)}
    return found


def test_resource_failure_reports_innermost_error_and_blocks_dependants(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    arm.faults.add(
        Fault(
            "resource",
            path="Microsoft.Network/bastionHosts",
            code="PublicIpAddressInUse",
            message="Public IP pip-x is already used by another resource.",
        )
    )
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 5
    assert "PublicIpAddressInUse: Public IP pip-x is already used" in result.stdout
    assert "target: /subscriptions/" in result.stdout and "bastionHosts/bas-aitrain-prod-eus2" in result.stdout
    submitted = {r.path.rsplit("/", 1)[-1] for r in arm.log if r.method == "PUT" and "/deployments/" in r.path}
    dependants = _dependants_of(zone, "hpclz-aitrain-prod-network")
    assert dependants and not (dependants & submitted)
    assert "hpclz-aitrain-prod-network" in submitted
    assert "not started" in result.stdout
    state = state_of(zone)
    assert state["deployments"]["hpclz-aitrain-prod-network"]["status"] == "failed"
    assert "PublicIpAddressInUse" in state["deployments"]["hpclz-aitrain-prod-network"]["error"]


def test_rerun_after_failure_skips_what_succeeded(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.faults.add(
        Fault("resource", path="Microsoft.ManagedIdentity/userAssignedIdentities", code="Conflict", message="x")
    )
    assert run_cli("deploy", str(zone), "--yes").exit_code == 5
    before = len(arm.log)
    again = run_cli("deploy", str(zone), "--yes")
    assert again.exit_code == 0, again.stderr
    resubmitted = {r.path.rsplit("/", 1)[-1] for r in arm.log[before:] if r.method == "PUT"}
    assert "hpclz-aitrain-prod-organization" not in resubmitted
    assert "hpclz-aitrain-prod-identity" in resubmitted


def test_network_loss_mid_deploy_then_resume(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.world.latency["microsoft.storagecache/amlfilesystems"] = 0.5
    lost = arm.faults.add(Fault("drop", method="GET", path=r"prod-storage/operations$", times=None))
    first = run_cli("deploy", str(zone), "--yes")
    assert first.exit_code == 5
    assert state_of(zone)["deployments"]["hpclz-aitrain-prod-storage"]["status"] == "running"
    assert lost.fired > 1
    arm.faults.clear()

    again = run_cli("deploy", str(zone), "--yes")
    assert again.exit_code == 0, again.stderr
    assert "hpclz-aitrain-prod-storage: attached" in again.stderr
    assert sum(1 for r in arm.log if r.method == "PUT" and r.path.endswith("prod-storage")) == 1


def test_failed_deploy_envelope_names_the_innermost_error(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    """Under -o json a script reads why from `errors`, not by digging through `result`."""
    import json

    arm.faults.add(
        Fault(
            "resource",
            path="Microsoft.Network/bastionHosts",
            code="PublicIpAddressInUse",
            message="Public IP pip-x is already used by another resource.",
        )
    )
    result = run_cli("deploy", str(zone), "--yes", "-o", "json")
    assert result.exit_code == 5
    envelope = json.loads(result.stdout)
    assert envelope["ok"] is False and envelope["exit_code"] == 5
    (error,) = envelope["errors"]
    assert error["code"] == "PublicIpAddressInUse"
    assert error["path"] == "hpclz-aitrain-prod-network"
    assert "Public IP pip-x is already used" in error["message"] and "bastionHosts/" in error["message"]
