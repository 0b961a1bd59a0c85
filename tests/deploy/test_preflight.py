"""Live preflight through `hpclz deploy` against the stand-in: nothing is deployed when it fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli
from tests.support.arm_standin import ArmStandIn, Fault
from tests.support.arm_standin.catalog import default_usages, usage
from tests.support.arm_standin.proving import DEPLOYER


@pytest.fixture
def zone(tmp_path: Path) -> Path:
    target = tmp_path / "zone" / "lz.yaml"
    target.parent.mkdir()
    shutil.copy(REPO / "configs" / "ai-training.yaml", target)
    return target


def _deployed(arm: ArmStandIn) -> list[str]:
    return [r.path for r in arm.log if r.method == "PUT"]


def test_unregistered_provider_stops_deploy_with_the_fix(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.world.unregistered.add("microsoft.storagecache")
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 1
    assert "HPCLZ-ORG-101" in result.stdout
    assert "az provider register --namespace Microsoft.StorageCache" in result.stdout
    assert "nothing was deployed" in result.stdout and _deployed(arm) == []


def test_quota_shortfall_warns_but_deploys(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.world.usages["eastus2"] = [usage("standardNDISRH200V5Family", 0, 960), *default_usages()]
    arm.world.usages["eastus2"] = [
        u for u in arm.world.usages["eastus2"] if u["name"]["value"] != "standardNDISRH200V5Family" or u["limit"] == 960
    ]
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr
    assert "HPCLZ-CMP-103" in result.stdout and "needs 3072 vCPUs" in result.stdout and "960 left" in result.stdout


def test_forbidden_sku_api_is_a_warning_not_a_crash(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.faults.add(
        Fault(
            "error", method="GET", path=r"/Microsoft.Compute/skus$", status=403, times=None, code="AuthorizationFailed"
        )
    )
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr
    assert "HPCLZ-CMP-104" in result.stdout and "AuthorizationFailed" in result.stdout


def test_arm_validate_failure_is_an_error_finding(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.faults.add(
        Fault(
            "error",
            method="POST",
            path=r"organization/validate$",
            status=400,
            code="InvalidTemplate",
            message="bad template",
        )
    )
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 1
    assert "HPCLZ-TPL-101" in result.stdout and "InvalidTemplate: bad template" in result.stdout
    assert _deployed(arm) == []


def test_rejected_token_is_one_line_exit_5(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HPCLZ_AZURE_TOKEN", "wrong-token")
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 5
    assert "Azure rejected the credentials" in result.stderr and "az login" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_subscription_the_user_holds_no_role_in_is_one_line_exit_5(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deploying user holds Owner on the stand-in's subscription only: ARM answers a request in any other
    subscription AuthorizationFailed over that scope (it authorizes before it looks the subscription up)."""
    other = "11111111-1111-1111-1111-111111111111"
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", other)
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 5
    assert "AuthorizationFailed" in result.stderr and f"over scope '/subscriptions/{other}" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert _deployed(arm) == []


def test_unknown_subscription_is_one_line_exit_5(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller whose roles reach every subscription (assigned at the root scope "/") is told the one it named does
    not exist."""
    arm.proving.authorization.grant(DEPLOYER.object_id, "Owner", "/")
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", "11111111-1111-1111-1111-111111111111")
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 5
    assert "SubscriptionNotFound" in result.stderr
    assert "Traceback" not in result.stderr and _deployed(arm) == []


def test_forbidden_provider_lookup_is_a_warning(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.faults.add(Fault("error", method="GET", path=r"/providers/Microsoft\.KeyVault$", status=403, times=None))
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr
    assert "HPCLZ-CMP-104" in result.stdout and "provider registration of Microsoft.KeyVault" in result.stdout
