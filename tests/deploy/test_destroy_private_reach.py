"""Plain destroy keeps kept data reachable, on the ARM stand-in through the SDK with the ai-training preset: the
private endpoints of its kept storage accounts and Key Vault, their DNS zone groups, the privatelink zones, the zones'
VNet links and the VNet stay (hpclz.deploy.private_reach), each named in destroy's output with why. --include-data
deletes them with the data."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import RunCli
from tests.deploy.conftest import destroy_everything, left_after_destroy, state_of
from tests.support.arm_standin import ArmStandIn

PE = "Microsoft.Network/privateEndpoints"
ZONE_GROUP = "Microsoft.Network/privateEndpoints/privateDnsZoneGroups"
LINK = "Microsoft.Network/privateDnsZones/virtualNetworkLinks"


def _of_type(arm: ArmStandIn, rtype: str) -> list[dict[str, Any]]:
    return [r for r in arm.world.resources.values() if r["type"] == rtype]


def test_plain_destroy_keeps_the_private_way_to_kept_data(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    targets = {
        r["name"]: r["properties"]["privateLinkServiceConnections"][0]["properties"]["privateLinkServiceId"]
        for r in _of_type(arm, PE)
    }
    # The zone's blob, file (NFS shared home), locker and vault endpoints: each reaches an account or vault that
    # turned public network access off (templates/arm/storage, templates/arm/identity).
    assert sorted(targets) == [
        "pep-aitrain-blob-prod-eus2",
        "pep-aitrain-file-prod-eus2",
        "pep-aitrain-kv-prod-eus2",
        "pep-aitrain-locker-prod-eus2",
    ]
    for target in targets.values():
        assert arm.world.resources[target.lower()]["properties"]["publicNetworkAccess"] == "Disabled"
    links = {r["id"] for r in _of_type(arm, LINK)}

    kept = run_cli("destroy", str(zone), "--yes")
    assert kept.exit_code == 0, kept.stdout
    assert sorted(r["name"] for r in _of_type(arm, PE)) == sorted(targets)
    for name, target in targets.items():
        account = target.rsplit("/", 1)[-1]
        assert (
            f"kept {PE} {name} (reaches kept {account} privately: its public network access is disabled, so only "
            "private endpoints reach it)" in kept.stderr
        ), kept.stderr
        assert f"kept {ZONE_GROUP} default (resolves kept {name} to its private address)" in kept.stderr
    assert len(_of_type(arm, ZONE_GROUP)) == len(targets)
    zones = {r["name"] for r in _of_type(arm, "Microsoft.Network/privateDnsZones")}
    assert {"privatelink.blob.core.windows.net", "privatelink.file.core.windows.net"} <= zones
    assert "privatelink.vaultcore.azure.net" in zones
    assert {r["id"] for r in _of_type(arm, LINK)} == links  # each zone still resolves in the kept VNet
    assert [r["name"] for r in _of_type(arm, "Microsoft.Network/virtualNetworks")] == ["vnet-aitrain-prod-eus2"]
    recorded = {r["id"].lower() for r in state_of(zone)["resources"]}
    assert all(r["id"].lower() in recorded for r in _of_type(arm, PE))  # kept, so still managed

    gone = destroy_everything(run_cli, arm, zone)
    assert gone.exit_code == 0, gone.stdout
    assert _of_type(arm, PE) == [] and _of_type(arm, ZONE_GROUP) == []
    assert left_after_destroy(arm) == []
