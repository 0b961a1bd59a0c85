"""Finding 4 of issue 13: a soft-deleted vault keeps its name for the retention period, and with purge protection
cannot be purged (MicrosoftDocs/azure-security-docs@025b849:articles/key-vault/general/soft-delete-overview.md).
The stand-in answers Vaults - Get Deleted in the shape of the REST spec's example "Retrieve a deleted vault"
(Microsoft.KeyVault/deletedVaults: properties.vaultId, location, deletionDate, scheduledPurgeDate,
purgeProtectionEnabled)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hpclz.config.loader import load_config
from hpclz.naming import NameBuilder
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.names import SoftDeletedVaultHoldsName
from tests.conftest import REPO
from tests.support.arm_standin import ArmStandIn


def _deleted(sub: str, location: str, name: str, protected: bool) -> dict[str, Any]:
    return {
        "id": f"/subscriptions/{sub}/providers/Microsoft.KeyVault/locations/{location}/deletedVaults/{name}",
        "name": name,
        "type": "Microsoft.KeyVault/deletedVaults",
        "properties": {
            "vaultId": f"/subscriptions/{sub}/resourceGroups/rg-old/providers/Microsoft.KeyVault/vaults/{name}",
            "location": location,
            "tags": {},
            "deletionDate": "2026-11-20T10:00:00Z",
            "scheduledPurgeDate": "2027-02-18T10:00:00Z",
            "purgeProtectionEnabled": protected,
        },
    }


def test_rule_names_the_way_out_and_whether_purge_is_possible() -> None:
    loaded = load_config(REPO / "configs" / "ai-training.yaml")
    assert list(SoftDeletedVaultHoldsName().check(LiveContext(loaded=loaded, location="eastus2"))) == []
    body = _deleted("s", "eastus2", "kv-x", protected=False)
    [finding] = SoftDeletedVaultHoldsName().check(LiveContext(loaded=loaded, location="eastus2", deleted_vault=body))
    assert "holds its name until 2027-02-18T10:00:00Z" in finding.message
    assert "az keyvault purge --name kv-x" in (finding.fix or "")


def test_redeploy_over_a_purge_protected_deleted_vault_stops_before_any_write(
    arm: ArmStandIn, zone: Path, run_cli
) -> None:
    name = NameBuilder(load_config(zone).config).name("key_vault")
    body = _deleted(arm.subscription_id, "eastus2", name, protected=True)
    arm.world.resources[body["id"].lower()] = body
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "HPCLZ-IDN-101" in result.stdout and "cannot be purged" in result.stdout
    assert [r.path for r in arm.log if r.method == "PUT"] == []
