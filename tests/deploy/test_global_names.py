"""Storage account and Key Vault names are global (learn.microsoft.com/azure/azure-resource-manager/management/
resource-name-rules): preflight asks checkNameAvailability for every such name the zone would create."""

from __future__ import annotations

from pathlib import Path

from hpclz.config.loader import load_config
from hpclz.naming import NameBuilder
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.names import GlobalNameTaken
from tests.conftest import REPO
from tests.support.arm_standin import ArmStandIn


def test_rule_reports_arms_reason() -> None:
    loaded = load_config(REPO / "configs" / "ai-training.yaml")
    assert list(GlobalNameTaken().check(LiveContext(loaded=loaded, location="eastus2"))) == []
    taken = {"staitrainprodeus2a1": "AlreadyExists: The storage account named staitrainprodeus2a1 is already taken."}
    [finding] = GlobalNameTaken().check(LiveContext(loaded=loaded, location="eastus2", names_taken=taken))
    assert "is already taken" in finding.message and finding.line is not None


def test_a_storage_name_held_elsewhere_stops_deploy_and_a_redeploy_does_not_trip_on_its_own(
    arm: ArmStandIn, zone: Path, run_cli
) -> None:
    account = NameBuilder(load_config(zone).config).name("storage_account")
    arm.world.taken_names.add(account)
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "HPCLZ-STO-101" in result.stdout and f"The storage account named {account} is already taken" in result.stdout
    assert [r.path for r in arm.log if r.method == "PUT"] == []
    arm.world.taken_names.clear()
    assert run_cli("deploy", str(zone), "--yes").exit_code == 0
    again = run_cli("deploy", str(zone), "--yes")  # the zone's own account and vault now exist: not "taken"
    assert again.exit_code == 0, again.stdout + again.stderr
    assert "HPCLZ-STO-101" not in again.stdout
