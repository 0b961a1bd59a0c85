"""The DeploymentPlan contract and the landing-zone facts every rendered template must carry."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from hpclz.arm.api_versions import pinned_version
from hpclz.arm.walk import iter_resources
from hpclz.config.root import LandingZoneConfig
from hpclz.render.model import DeploymentPlan, Scope
from tests.render.conftest import preset_plan

# Types whose schema has no `tags` (they cannot carry them; their parent does).
UNTAGGABLE = {
    "microsoft.security/pricings",  # its schema has no tags (2024-01-01/Microsoft.Security.json)
    "microsoft.insights/diagnosticsettings",  # nor has this one (2021-05-01-preview/Microsoft.Insights.json)
    "microsoft.insights/datacollectionruleassociations",  # nor this (2024-03-11/Microsoft.Insights.json)
    "microsoft.operationalinsights/workspaces/savedsearches",  # nor this (2023-09-01/Microsoft.OperationalInsights.json)
    "microsoft.authorization/roleassignments",
    "microsoft.authorization/policyassignments",
    "microsoft.keyvault/vaults/secrets",
    "microsoft.storage/storageaccounts/blobservices",
    "microsoft.storage/storageaccounts/blobservices/containers",
    "microsoft.storage/storageaccounts/fileservices",  # no tags in its schema (2023-05-01/Microsoft.Storage.json)
    "microsoft.storage/storageaccounts/fileservices/shares",
    "microsoft.storage/storageaccounts/managementpolicies",
    "microsoft.network/privateendpoints/privatednszonegroups",
    "microsoft.network/virtualnetworks/virtualnetworkpeerings",
    "microsoft.maintenance/configurationassignments",
    "microsoft.dbformysql/flexibleservers/configurations",  # no tags (2025-12-01-preview/Microsoft.DBforMySQL.FlexibleServers)
}
CONFIG_SECTIONS = set(LandingZoneConfig.model_fields)


def _all(plan: DeploymentPlan) -> Iterator[tuple[str, Any]]:
    for d in plan.deployments:
        for found in iter_resources(d.template.get("resources", [])):
            yield d.component, found


def test_organization_deploys_first_at_subscription_scope(plan: DeploymentPlan) -> None:
    first = plan.deployments[0]
    assert first.component == "organization" and first.scope is Scope.SUBSCRIPTION
    assert {r["type"] for r in first.resources()} == {"Microsoft.Resources/resourceGroups"}
    # Defender pricings and the activity log setting live on no resource group (audit nests the rest).
    rest = [d for d in plan.deployments[1:] if d.component not in ("defender", "audit")]
    assert all(d.scope is Scope.RESOURCE_GROUP and d.resource_group for d in rest)


def test_dependencies_point_backwards_and_form_waves(plan: DeploymentPlan) -> None:
    seen: set[str] = set()
    for d in plan.deployments:
        assert set(d.depends_on) <= seen, f"{d.name} depends on a later or unknown deployment"
        seen.add(d.name)
    waves = plan.waves()
    assert [d.component for d in waves[0]] == ["organization"]
    assert sum(len(w) for w in waves) == len(plan.deployments)


def test_every_resource_names_the_config_field_that_made_it(plan: DeploymentPlan) -> None:
    for component, found in _all(plan):
        comment = found.resource.get("comments", "")
        assert comment.startswith("hpclz: "), f"{component}: {found.label} has no config path"
        root = re.split(r"[.\[ ]", comment.removeprefix("hpclz: "))[0]
        assert root in CONFIG_SECTIONS, f"{found.label}: {comment!r} does not start with a config section"


def test_every_taggable_resource_carries_the_zone_tags(plan: DeploymentPlan) -> None:
    for _, found in _all(plan):
        if found.type.lower() in UNTAGGABLE:
            continue
        tags = found.resource.get("tags", {})
        assert tags.get("hpclz-zone") == plan.landing_zone, found.label
        assert tags.get("hpclz-managed") == "true", found.label
        assert {"owner", "costCenter"} <= set(tags), found.label


def test_data_bearing_resources_are_marked(plan: DeploymentPlan) -> None:
    marked = {found.type for _, found in _all(plan) if found.resource.get("tags", {}).get("hpclz-data") == "true"}
    # CycleCloud's locker account holds the cluster-init CycleCloud uploads again, not user data (docs/locker.md).
    types = {found.type for _, found in _all(plan) if found.resource.get("comments") != "hpclz: compute.cyclecloud"}
    for data_type in (
        "Microsoft.StorageCache/amlFilesystems",
        "Microsoft.Storage/storageAccounts",
        "Microsoft.NetApp/netAppAccounts/capacityPools/volumes",
    ):
        if data_type in types:
            assert data_type in marked, data_type
    assert "Microsoft.Network/virtualNetworks" not in marked


def test_every_resource_uses_its_pinned_api_version(plan: DeploymentPlan) -> None:
    for _, found in _all(plan):
        assert found.resource["apiVersion"] == pinned_version(found.type), found.label


def test_role_assignment_names_are_deterministic_guids(plan: DeploymentPlan) -> None:
    for _, found in _all(plan):
        if found.type == "Microsoft.Authorization/roleAssignments":
            assert re.fullmatch(r"\[guid\(.+\)\]", found.resource["name"]), found.resource["name"]
            assert "/roleDefinitions'" in found.resource["properties"]["roleDefinitionId"]


def test_no_vm_nic_has_a_public_ip(plan: DeploymentPlan) -> None:
    for _, found in _all(plan):
        if found.type == "Microsoft.Network/networkInterfaces":
            for ipconfig in found.resource["properties"]["ipConfigurations"]:
                assert "publicIPAddress" not in ipconfig["properties"]


def test_nsgs_deny_internet_inbound_explicitly(plan: DeploymentPlan) -> None:
    for _, found in _all(plan):
        if found.type != "Microsoft.Network/networkSecurityGroups":
            continue
        rules = [r["properties"] for r in found.resource["properties"]["securityRules"]]
        assert any(
            r["access"] == "Deny" and r["direction"] == "Inbound" and r["sourceAddressPrefix"] in ("Internet", "*")
            for r in rules
        ), found.label


def test_rendering_is_deterministic() -> None:
    first = preset_plan("ai-training")
    preset_plan.cache_clear()
    again = preset_plan("ai-training")
    assert [d.template_hash() for d in first.deployments] == [d.template_hash() for d in again.deployments]
    assert first.config_hash == again.config_hash
