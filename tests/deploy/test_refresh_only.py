"""`hpclz deploy --refresh-only` (terraform's `apply -refresh-only`,
https://developer.hashicorp.com/terraform/cli/commands/plan#planning-modes) on the energy preset deployed to the
ARM stand-in: what changed outside hpclz is shown, and after a yes recorded in state; nothing is written to Azure.
The out-of-band edits are what an operator does in the portal: open the storage account to the Internet (a
modify) and delete Bastion (a delete)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import RunCli
from tests.deploy.conftest import state_of
from tests.deploy.test_day2 import _drift, assert_inventory_is_state, assert_plan_clean, writes_since
from tests.support.arm_standin import ArmStandIn


def _record(config: Path, rid: str) -> dict[str, Any] | None:
    return next((r for r in state_of(config)["resources"] if r["id"].lower() == rid.lower()), None)


def test_refresh_only_records_drift_in_state_and_writes_nothing_to_azure(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    account, bastion = _drift(arm)
    serial = state_of(energy)["serial"]

    start = len(arm.log)
    unasked = run_cli("deploy", str(energy), "--refresh-only")  # no terminal, no --yes: refused, nothing recorded
    assert unasked.exit_code == 64 and "needs confirmation" in unasked.stderr
    assert state_of(energy)["serial"] == serial

    done = run_cli("deploy", str(energy), "--refresh-only", "--yes")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "Changed outside hpclz" in done.stderr  # shown before the question, as plan shows it
    assert "removed from state (deleted in Azure): Microsoft.Network/bastionHosts bas-energy-prod-scus" in done.stdout
    assert "nothing was written to Azure" in done.stdout
    assert writes_since(arm, start) == []
    assert {r.method for r in arm.log[start:]} <= {"GET"}  # no validate, no what-if: only reads

    state = state_of(energy)
    assert _record(energy, bastion) is None
    record = _record(energy, account)
    assert record is not None and record["properties"]["properties"]["publicNetworkAccess"] == "Enabled"
    assert {n for n, d in state["deployments"].items() if d["drifted"]} == {
        "hpclz-energy-prod-network",
        "hpclz-energy-prod-storage",
    }
    assert_inventory_is_state(arm, energy)  # state is Azure now, Bastion's absence included

    # The config is compared with Azure as it is now: the fixes are actions, not drift any more.
    for refresh in ("--refresh=true", "--refresh=false"):
        plan = run_cli("plan", str(energy), "--detailed-exitcode", refresh)
        assert plan.exit_code == 2, plan.stdout + plan.stderr
        assert "Changed outside hpclz" not in plan.stdout
        assert 'properties.publicNetworkAccess: "Enabled" -> "Disabled"' in plan.stdout
        assert "+ Microsoft.Network/bastionHosts bas-energy-prod-scus" in plan.stdout

    fixed = run_cli("deploy", str(energy), "--yes")
    assert fixed.exit_code == 0, fixed.stdout + fixed.stderr
    assert arm.world.resources[account]["properties"]["publicNetworkAccess"] == "Disabled"
    assert bastion in arm.world.resources
    assert not any(d["drifted"] for d in state_of(energy)["deployments"].values())
    assert_plan_clean(run_cli, energy)
    assert_inventory_is_state(arm, energy)


def test_refresh_only_with_nothing_changed_leaves_state_as_it_was(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    before = state_of(energy)
    same = run_cli("deploy", str(energy), "--refresh-only", "--yes")
    assert same.exit_code == 0, same.stdout + same.stderr
    assert "the state matches Azure" in same.stdout
    assert state_of(energy) == before  # serial and all: saved plans stay current


def test_refresh_only_takes_no_plan_replace_or_target(arm: ArmStandIn, energy: Path, run_cli: RunCli) -> None:
    result = run_cli("deploy", str(energy), "--refresh-only", "--yes", "--target", "x/y")
    assert result.exit_code == 64 and "--refresh-only writes nothing to Azure" in result.stderr


def test_refresh_only_before_any_deploy_has_nothing_to_read(arm: ArmStandIn, energy: Path, run_cli: RunCli) -> None:
    start = len(arm.log)
    result = run_cli("deploy", str(energy), "--refresh-only", "--yes")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert arm.log[start:] == [] and not list((energy.parent / ".hpclz").rglob("state.json"))


def test_answering_no_records_nothing(arm: ArmStandIn, energy: Path, run_cli: RunCli) -> None:
    from hpclz.deploy.contract import Contract
    from hpclz.services.deploy import DeployOptions, deploy

    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    _drift(arm)
    before = state_of(energy)
    shown: list[Any] = []

    def refuse(_plan: Any, _unchanged: Any, changes: Any) -> bool:
        shown.append(changes)
        return False

    result = deploy(DeployOptions(energy, confirm=refuse, contract=Contract(refresh_only=True)))
    assert result.exit_code == 1 and result.payload.cancelled
    assert sorted(r.type for r in shown[0].drift) == [
        "Microsoft.Network/bastionHosts",
        "Microsoft.Storage/storageAccounts",
    ]
    assert state_of(energy) == before
