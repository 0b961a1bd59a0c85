"""Every name render emits meets its type's Azure naming rules (hpclz.naming.NAME_RULES).

HPCLZ-ORG-004 predicts names from the config; this pins the names render really writes, so the two
cannot drift apart unnoticed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ruamel.yaml import YAML

from hpclz.arm.walk import iter_resources
from hpclz.config import load_config_text
from hpclz.config.root import LandingZoneConfig
from hpclz.naming import NAME_RULES, NameBuilder, unique_suffix
from hpclz.render.model import DeploymentPlan
from tests.render.conftest import preset_plan, preset_text

KIND_BY_TYPE = {
    "Microsoft.Resources/resourceGroups": "resource_group",
    "Microsoft.Network/virtualNetworks": "virtual_network",
    "Microsoft.Network/networkSecurityGroups": "network_security_group",
    "Microsoft.Network/bastionHosts": "bastion",
    "Microsoft.Network/natGateways": "nat_gateway",
    "Microsoft.Network/publicIPAddresses": "public_ip",
    "Microsoft.Network/privateEndpoints": "private_endpoint",
    "Microsoft.Network/routeTables": "route_table",
    "Microsoft.Network/networkInterfaces": "network_interface",
    "Microsoft.KeyVault/vaults": "key_vault",
    "Microsoft.Storage/storageAccounts": "storage_account",
    "Microsoft.ManagedIdentity/userAssignedIdentities": "managed_identity",
    "Microsoft.OperationalInsights/workspaces": "log_analytics",
    "Microsoft.Insights/actionGroups": "action_group",
    "Microsoft.Insights/dataCollectionRules": "data_collection_rule",
    "Microsoft.Insights/metricAlerts": "metric_alert",
    "Microsoft.Compute/virtualMachines": "virtual_machine",
    "Microsoft.StorageCache/amlFilesystems": "lustre",
    "Microsoft.NetApp/netAppAccounts": "netapp_account",
    "Microsoft.Maintenance/maintenanceConfigurations": "maintenance_configuration",
}


def test_every_rendered_name_meets_its_type_rules(plan: DeploymentPlan) -> None:
    checked = 0
    problems = []
    for deployment in plan.deployments:
        for found in iter_resources(deployment.template.get("resources", [])):
            kind = KIND_BY_TYPE.get(found.type)
            name = found.resource.get("name")
            if kind is None or not isinstance(name, str) or name.startswith("["):
                continue
            checked += 1
            problems += [f"{found.type} {name!r} {p}" for p in NAME_RULES[kind].problems(name)]
    assert checked >= 10, "expected the preset to name at least ten resources by convention"
    assert problems == []


def test_the_check_catches_a_bad_name() -> None:
    assert NAME_RULES["storage_account"].problems("st-energy-prod-scus")
    assert NAME_RULES["key_vault"].problems("kv-a-very-long-landing-zone-name-prod")


def _config(edit: Callable[[dict[str, Any]], None]) -> LandingZoneConfig:
    data = YAML(typ="safe").load(preset_text("energy"))
    edit(data)
    return load_config_text(json.dumps(data), "energy-variant.yaml").config


def test_global_names_get_a_deterministic_suffix_by_default() -> None:
    """Storage account and Key Vault names are global (learn.microsoft.com/azure/
    azure-resource-manager/management/resource-name-rules); energy sets no suffix, and still gets one."""
    energy = preset_plan("energy")
    accounts = [
        r["name"]
        for d in energy.deployments
        for r in d.template.get("resources", [])
        if r.get("type") == "Microsoft.Storage/storageAccounts"
    ]
    # data account, CycleCloud's locker, shared-home NFS account
    assert accounts == ["stenergyprodscuseb80", "stenergyccprodscuseb80", "stenergynfsprodscuseb80"]

    def other_subscription(data: dict[str, Any]) -> None:
        data["metadata"]["subscription_id"] = "11111111-2222-4333-8444-555555555555"

    def explicit(data: dict[str, Any]) -> None:
        data["organization"]["naming"] = {"unique_suffix": "x9"}

    def none(data: dict[str, Any]) -> None:
        data["organization"]["naming"] = {"unique_suffix": ""}

    assert unique_suffix(_config(lambda _: None)) == "eb80"
    assert unique_suffix(_config(other_subscription)) not in ("", "eb80")
    assert NameBuilder(_config(explicit)).name("storage_account") == "stenergyprodscusx9"
    assert NameBuilder(_config(none)).name("storage_account") == "stenergyprodscus"


def test_a_derived_suffix_never_pushes_a_global_name_past_its_limit() -> None:
    """metadata.name allows 12 characters, but kv-<name>-prod-scus-<suffix> would be 30: the readable part gives way
    and the derived suffix stays (Key Vault and storage account names are 3-24 characters, learn.microsoft.com/azure/
    azure-resource-manager/management/resource-name-rules)."""

    def long_name(data: dict[str, Any]) -> None:
        data["metadata"]["name"] = "seismicdata1"

    config = _config(long_name)
    suffix = unique_suffix(config)
    for kind in ("key_vault", "storage_account"):
        name = NameBuilder(config).name(kind, "nfs")
        assert len(name) <= 24 and name.endswith(suffix), name
        assert NAME_RULES[kind].problems(name) == [], name
    assert NameBuilder(config).name("key_vault") == f"kv-seismicdata1-pro-{suffix}"
