"""Finding 2 of issue 13: host-based encryption needs the Microsoft.Compute/EncryptionAtHost feature registered
(MicrosoftDocs/azure-compute-docs@055347c:articles/virtual-machines/linux/disks-enable-host-based-encryption-cli.md).
Preflight reads the feature through the real SDK client from the stand-in's Microsoft.Features endpoint."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hpclz.config.loader import load_config
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.subscription import FeatureNotRegistered
from tests.conftest import REPO
from tests.support.arm_standin import ArmStandIn


@pytest.fixture
def zone(tmp_path: Path) -> Path:
    target = tmp_path / "zone" / "lz.yaml"
    target.parent.mkdir()
    shutil.copy(REPO / "configs" / "ai-training.yaml", target)
    return target


def test_rule_passes_when_registered_and_names_the_command_when_not() -> None:
    loaded = load_config(REPO / "configs" / "ai-training.yaml")
    registered = LiveContext(
        loaded=loaded, location="eastus2", features={"Microsoft.Compute/EncryptionAtHost": "Registered"}
    )
    assert list(FeatureNotRegistered().check(registered)) == []
    pending = LiveContext(loaded=loaded, location="eastus2", features={"Microsoft.Compute/EncryptionAtHost": "Pending"})
    [finding] = FeatureNotRegistered().check(pending)
    assert "az feature register --namespace Microsoft.Compute --name EncryptionAtHost" in (finding.fix or "")
    assert finding.line is not None


def test_unregistered_encryption_at_host_stops_deploy_before_any_write(arm: ArmStandIn, zone: Path, run_cli) -> None:
    arm.world.unregistered_features.add("microsoft.compute/encryptionathost")
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "HPCLZ-CMP-107" in result.stdout and "Microsoft.Compute/EncryptionAtHost is NotRegistered" in result.stdout
    assert [r.path for r in arm.log if r.method == "PUT"] == []
    asked = [r.path for r in arm.log if r.method == "GET" and "/features/" in r.path]
    assert asked and all("Microsoft.Features/providers/Microsoft.Compute/features/EncryptionAtHost" in p for p in asked)
