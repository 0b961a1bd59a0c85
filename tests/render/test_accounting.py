"""Slurm accounting mode new: the MySQL flexible server, its network, its password path and the cluster settings."""

from __future__ import annotations

import json
from typing import Any

from hpclz.arm.api_versions import PINNED_API_VERSIONS
from hpclz.render.model import DeploymentPlan
from tests.conftest import REPO
from tests.render.conftest import preset_plan, resources_of, variant

SECRET = "never-rendered-value"
SPEC_GET = json.loads((REPO / "tests" / "fixtures" / "arm" / "mysql_server_get_vnet_specexample.json").read_text())


def _deployment(plan: DeploymentPlan, component: str) -> Any:
    (found,) = [d for d in plan.deployments if d.component == component]
    return found


def _dev(data: dict[str, Any]) -> None:
    """The energy preset as a dev zone on the defaults: only the mode and the secret named."""
    data["metadata"]["environment"] = "dev"
    data["compute"]["accounting"] = {"mode": "new", "password_secret_name": "slurmdb-password"}
    data["identity"]["key_vault"]["secrets"]["slurmdb-password"] = SECRET


def test_server_has_private_access_only_and_the_specs_vnet_shape() -> None:
    """The 2023-12-30 spec's VNet-integrated server (ServerGetWithVnet.json) has publicNetworkAccess Disabled and a
    delegatedSubnetResourceId; hpclz's adds the private DNS zone that an ARM template must bring itself."""
    plan = preset_plan("energy")
    (server,) = resources_of(plan, "Microsoft.DBforMySQL/flexibleServers")
    spec = SPEC_GET["body"]
    # The VNet shape is the 2023-12-30 example's; the server renders at the pinned version that allows MySQL 8.4.
    assert server["apiVersion"] == PINNED_API_VERSIONS["microsoft.dbformysql/flexibleservers"] == "2025-12-01-preview"
    assert server["properties"]["version"] == "8.4"
    assert set(spec["properties"]["network"]) <= set(server["properties"]["network"])
    assert (
        server["properties"]["network"]["publicNetworkAccess"] == spec["properties"]["network"]["publicNetworkAccess"]
    )
    assert "snet-energy-db-prod-scus" in server["properties"]["network"]["delegatedSubnetResourceId"]
    zone = f"{server['name']}.private.mysql.database.azure.com"
    assert zone in server["properties"]["network"]["privateDnsZoneResourceId"]
    assert {"backupRetentionDays", "geoRedundantBackup"} <= set(spec["properties"]["backup"])
    assert server["properties"]["backup"] == {"backupRetentionDays": 35, "geoRedundantBackup": "Enabled"}
    assert server["properties"]["highAvailability"] == {"mode": "ZoneRedundant", "standbyAvailabilityZone": "2"}
    assert server["sku"]["tier"] == spec["sku"]["tier"] == "GeneralPurpose"
    assert server["tags"]["hpclz-data"] == "true"
    # The zone and its VNet link are in the network deployment, created whatever network.private_dns_zones says.
    network = _deployment(plan, "network")
    links = [r["name"] for r in network.template["resources"] if r["type"].endswith("/virtualNetworkLinks")]
    assert f"{zone}/vnet-energy-prod-scus" in links
    (subnet,) = [
        s
        for r in network.template["resources"]
        if r["type"] == "Microsoft.Network/virtualNetworks"
        for s in r["properties"]["subnets"]
        if s["name"] == "snet-energy-db-prod-scus"
    ]
    assert subnet["properties"]["delegations"][0]["properties"]["serviceName"] == "Microsoft.DBforMySQL/flexibleServers"


def test_tls_is_required_and_the_password_is_only_a_secure_parameter() -> None:
    plan = variant("energy", _dev)
    accounting = _deployment(plan, "accounting")
    assert accounting.resource_group == "rg-energy-storage-dev-scus"
    assert accounting.secure_parameters == {"accountingAdminPassword": "identity.key_vault.secrets.slurmdb-password"}
    assert accounting.template["parameters"]["accountingAdminPassword"]["type"] == "securestring"
    (server,) = resources_of(plan, "Microsoft.DBforMySQL/flexibleServers")
    assert server["properties"]["administratorLoginPassword"] == "[parameters('accountingAdminPassword')]"
    (tls,) = resources_of(plan, "Microsoft.DBforMySQL/flexibleServers/configurations")
    assert tls["name"].endswith("/require_secure_transport") and tls["properties"]["value"] == "ON"
    everything = json.dumps([d.model_dump(mode="json") for d in plan.deployments])
    assert SECRET not in everything
    # Azure's defaults, as the docs give them: 7 days of local backups, no standby (concepts-backup-restore).
    assert server["properties"]["backup"] == {"backupRetentionDays": 7, "geoRedundantBackup": "Disabled"}
    assert server["properties"]["highAvailability"] == {"mode": "Disabled"}
    assert server["sku"] == {"name": "Standard_B2ms", "tier": "Burstable"}
    assert "availabilityZone" not in server["properties"]


def test_slurmdbd_reaches_the_new_server_by_fqdn_after_it_exists() -> None:
    plan = variant("energy", _dev)
    compute = _deployment(plan, "compute")
    assert "hpclz-energy-dev-accounting" in compute.depends_on
    template = compute.artifacts["cyclecloud/slurm-cluster.txt"]
    (server,) = resources_of(plan, "Microsoft.DBforMySQL/flexibleServers")
    assert f'slurm.accounting.url = "{server["name"]}.mysql.database.azure.com"' in template
    assert 'slurm.accounting.user = "slurmdbd"' in template
    assert "slurm.accounting.password = $AccountingPassword" in template
    secrets = json.loads(compute.artifacts["cyclecloud/secret-parameters.json"])
    assert secrets["AccountingPassword"]["name"] == "slurmdb-password"


def test_ai_training_runs_it_with_a_same_zone_standby() -> None:
    (server,) = resources_of(preset_plan("ai-training"), "Microsoft.DBforMySQL/flexibleServers")
    assert server["properties"]["highAvailability"] == {"mode": "SameZone"}
    assert server["properties"]["backup"] == {"backupRetentionDays": 35, "geoRedundantBackup": "Enabled"}


def test_no_server_without_mode_new() -> None:
    for stem in ("finance", "manufacturing"):
        assert resources_of(preset_plan(stem), "Microsoft.DBforMySQL/flexibleServers") == []
        zones = [r["name"] for r in resources_of(preset_plan(stem), "Microsoft.Network/privateDnsZones")]
        assert not any(z.endswith("mysql.database.azure.com") for z in zones)
