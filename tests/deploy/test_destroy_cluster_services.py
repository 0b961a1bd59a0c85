"""Cluster services that hold data, on the ARM stand-in through the SDK: Slurm accounting's MySQL flexible server and
the NetApp shared home. Plain destroy keeps them, --include-data deletes them.

The job history lives in the server (sacct, fair-share). Destroy keeps what carries hpclz-data and what it stands on:
the server's recorded properties name its delegated subnet and its private DNS zone, which the server cannot change
after deployment (learn.microsoft.com/azure/mysql/flexible-server/concepts-networking-vnet), so both stay with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunCli
from tests.deploy.conftest import state_of
from tests.support.arm_standin import ArmStandIn

MYSQL = "Microsoft.DBforMySQL/flexibleServers"


def _of_type(arm: ArmStandIn, rtype: str) -> list[dict[str, Any]]:
    return [r for r in arm.world.resources.values() if r["type"] == rtype]


@pytest.mark.slow
def test_destroy_keeps_the_accounting_database_unless_include_data(
    arm: ArmStandIn, energy: Path, run_cli: RunCli
) -> None:
    deployed = run_cli("deploy", str(energy), "--yes")
    assert deployed.exit_code == 0, deployed.stderr
    [server] = _of_type(arm, MYSQL)
    [tls] = _of_type(arm, "Microsoft.DBforMySQL/flexibleServers/configurations")
    assert (
        tls["id"].endswith(f"/{server['name']}/configurations/require_secure_transport")
        and tls["properties"]["value"] == "ON"
    )
    # The secureString reached ARM as a deployment parameter and nowhere else hpclz writes.
    state_text = "".join(p.read_text() for p in energy.parent.joinpath(".hpclz").rglob("*.json"))
    assert "slurmdb-Test-4b1d9e" not in state_text
    assert server["properties"]["network"]["publicNetworkAccess"] == "Disabled"
    assert server["properties"]["backup"] == {"backupRetentionDays": 35, "geoRedundantBackup": "Enabled"}
    assert any(r["id"].lower() == server["id"].lower() and r["data_bearing"] for r in state_of(energy)["resources"])

    kept = run_cli("destroy", str(energy), "--yes")
    assert kept.exit_code == 0, kept.stderr
    assert [r["name"] for r in _of_type(arm, MYSQL)] == [server["name"]]
    [dns_zone] = [
        r
        for r in _of_type(arm, "Microsoft.Network/privateDnsZones")
        if r["name"] == f"{server['name']}.private.mysql.database.azure.com"
    ]
    # The VNet holds the server's delegated subnet.
    assert [r["name"] for r in _of_type(arm, "Microsoft.Network/virtualNetworks")] == ["vnet-energy-prod-scus"]
    # And the zone's link to that VNet stays: a private DNS zone resolves only in the VNets linked to it
    # (learn.microsoft.com/azure/mysql/flexible-server/concepts-networking-vnet, "Private DNS zone integration").
    [link] = [
        r
        for r in _of_type(arm, "Microsoft.Network/privateDnsZones/virtualNetworkLinks")
        if r["id"].lower().startswith(f"{dns_zone['id'].lower()}/")
    ]
    assert link["properties"]["virtualNetwork"]["id"].lower().endswith("/virtualnetworks/vnet-energy-prod-scus")
    assert (
        f"kept Microsoft.Network/privateDnsZones/virtualNetworkLinks {link['name'].rsplit('/', 1)[-1]} (resolves kept "
        f"{dns_zone['name']} in kept vnet-energy-prod-scus)" in kept.stderr
    ), kept.stderr
    assert link["id"] in [r["id"] for r in state_of(energy)["resources"]]  # kept, so still managed
    assert _of_type(arm, "Microsoft.Compute/virtualMachines") == []

    gone = run_cli("destroy", str(energy), "--yes", "--include-data")
    assert gone.exit_code == 0, gone.stderr
    assert _of_type(arm, MYSQL) == []
    assert _of_type(arm, "Microsoft.DBforMySQL/flexibleServers/configurations") == []


@pytest.mark.slow
def test_netapp_shared_home_volumes_are_data_kept_by_plain_destroy(
    arm: ArmStandIn, manufacturing: Path, run_cli: RunCli
) -> None:
    """storage.shared mode netapp: home and /sched are ANF volumes in storage.netapp's pool, kept like every volume."""
    deployed = run_cli("deploy", str(manufacturing), "--yes")
    assert deployed.exit_code == 0, deployed.stderr
    volumes = {
        r["name"].rsplit("/", 1)[-1]: r for r in _of_type(arm, "Microsoft.NetApp/netAppAccounts/capacityPools/volumes")
    }
    home = volumes["vol-cae-hpclz-home-test-weu"]
    assert home["properties"]["creationToken"] == "hpclz-home" and home["properties"]["unixPermissions"] == "0755"
    assert home["properties"]["exportPolicy"]["rules"][0]["allowedClients"] == "10.80.0.0/24,10.80.8.0/22"
    assert "vol-cae-hpclz-sched-test-weu" in volumes
    # No Azure Files account for shared home in this mode.
    assert not [r for r in _of_type(arm, "Microsoft.Storage/storageAccounts") if r.get("kind") == "FileStorage"]

    assert run_cli("destroy", str(manufacturing), "--yes").exit_code == 0
    kept = {
        r["name"].rsplit("/", 1)[-1] for r in _of_type(arm, "Microsoft.NetApp/netAppAccounts/capacityPools/volumes")
    }
    assert {"vol-cae-hpclz-home-test-weu", "vol-cae-hpclz-sched-test-weu"} <= kept
    assert run_cli("destroy", str(manufacturing), "--yes", "--include-data").exit_code == 0
    assert _of_type(arm, "Microsoft.NetApp/netAppAccounts/capacityPools/volumes") == []
