"""The ARM stand-in's Azure Policy (tests/support/arm_standin/policy.py): each part of the policy language it
implements, the real built-in definitions hpclz assigns, and a deny reaching the real SDK clients as ARM's
RequestDisallowedByPolicy. Operator semantics: learn.microsoft.com/azure/governance/policy/concepts/
definition-structure-policy-rule (Conditions, Logical operators, Fields)."""

from __future__ import annotations

from typing import Any

import pytest

from hpclz.azure.arm import Arm, deployment_body
from hpclz.azure.clients import AzureClients
from hpclz.render.model import Deployment
from hpclz.render.policy import ALLOWED_LOCATIONS, REQUIRE_TAG, STORAGE_NO_PUBLIC_BLOB, STORAGE_NO_PUBLIC_NETWORK
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.expressions import Scope
from tests.support.arm_standin.policy import (
    PolicyLanguageError,
    PolicyLog,
    condition,
    definitions,
    evaluate_assignment,
    judge,
)
from tests.support.standin_deployments import finished

RG = "/subscriptions/s/resourceGroups/rg1"
ACCOUNT: dict[str, Any] = {
    "id": RG + "/providers/Microsoft.Storage/storageAccounts/sa1",
    "name": "sa1",
    "type": "Microsoft.Storage/storageAccounts",
    "location": "westeurope",
    "tags": {"Owner": "risk"},
    "properties": {"publicNetworkAccess": "Disabled", "allowBlobPublicAccess": False},
}
NO_PARAMETERS = Scope("", None, "", "")


def holds(expr: dict[str, Any], resource: dict[str, Any] = ACCOUNT, scope: Scope = NO_PARAMETERS) -> bool:
    return condition(expr, resource, scope)


def test_the_definitions_are_the_built_ins_hpclz_assigns() -> None:
    assert set(definitions()) == {REQUIRE_TAG, ALLOWED_LOCATIONS, STORAGE_NO_PUBLIC_NETWORK, STORAGE_NO_PUBLIC_BLOB}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ({"field": "type", "equals": "microsoft.storage/STORAGEACCOUNTS"}, True),  # case-insensitive
        ({"field": "type", "equals": "Microsoft.Network/virtualNetworks"}, False),
        ({"field": "location", "notEquals": "eastus"}, True),
        ({"field": "location", "notEquals": "WestEurope"}, False),
        ({"field": "location", "in": ["eastus", "westeurope"]}, True),
        ({"field": "location", "in": ["eastus"]}, False),
        ({"field": "location", "notIn": ["eastus"]}, True),
        ({"field": "location", "notIn": ["WESTEUROPE"]}, False),
        ({"field": "id", "contains": "/resourcegroups/RG1/"}, True),
        ({"field": "id", "notContains": "/resourceGroups/databricks-cluster-"}, True),
        ({"field": "id", "notContains": "storageAccounts"}, False),
        ({"field": "name", "like": "sa*"}, True),
        ({"field": "name", "notLike": "sa*"}, False),
        ({"field": "tags[owner]", "exists": "true"}, True),  # tag names compare case-insensitively
        ({"field": "tags.costCenter", "exists": "false"}, True),
        ({"field": "tags['Owner']", "equals": "risk"}, True),
        ({"field": "Microsoft.Storage/storageAccounts/publicNetworkAccess", "notEquals": "Disabled"}, False),
        ({"field": "Microsoft.Storage/storageAccounts/allowBlobPublicAccess", "equals": "false"}, True),
    ],
)
def test_each_condition(expr: dict[str, Any], expected: bool) -> None:
    assert holds(expr) is expected


def test_an_absent_field_fails_every_comparison_but_the_negated_ones() -> None:
    bare = {**ACCOUNT, "properties": {}}
    alias = "Microsoft.Storage/storageAccounts/publicNetworkAccess"
    assert holds({"field": alias, "notEquals": "Disabled"}, bare)
    assert not holds({"field": alias, "equals": "Enabled"}, bare)
    assert holds({"field": alias, "exists": "false"}, bare)


def test_logical_operators() -> None:
    yes, no = {"field": "name", "equals": "sa1"}, {"field": "name", "equals": "other"}
    assert holds({"allOf": [yes, yes]}) and not holds({"allOf": [yes, no]})
    assert holds({"anyOf": [no, yes]}) and not holds({"anyOf": [no, no]})
    assert holds({"not": no}) and not holds({"not": yes})


def test_parameters_and_concat_in_fields_and_values() -> None:
    scope = Scope("", None, "", "", parameters={"tagName": "Owner", "places": ["westeurope"]})
    assert holds({"field": "[concat('tags[', parameters('tagName'), ']')]", "exists": "true"}, scope=scope)
    assert holds({"field": "location", "in": "[parameters('places')]"}, scope=scope)


def test_what_the_stand_in_does_not_implement_fails_instead_of_guessing() -> None:
    with pytest.raises(PolicyLanguageError):
        holds({"field": "Microsoft.Compute/virtualMachines/osProfile.adminUsername", "equals": "x"})
    with pytest.raises(PolicyLanguageError):
        holds({"count": {"field": "Microsoft.Network/virtualNetworks/subnets[*]"}, "greater": 0})


def _assignment(definition: str, parameters: dict[str, Any], mode: str = "Default") -> dict[str, Any]:
    return {
        "id": RG + "/providers/Microsoft.Authorization/policyAssignments/p1",
        "type": "Microsoft.Authorization/policyAssignments",
        "properties": {
            "policyDefinitionId": "/providers/Microsoft.Authorization/policyDefinitions/" + definition,
            "parameters": parameters,
            "enforcementMode": mode,
        },
    }


def test_require_a_tag_denies_a_tracked_resource_without_it_and_skips_what_has_no_tags() -> None:
    assignment = _assignment(REQUIRE_TAG, {"tagName": {"value": "costCenter"}})
    verdict = evaluate_assignment(assignment, ACCOUNT)
    assert verdict is not None and verdict.effect == "deny"
    assert evaluate_assignment(assignment, {**ACCOUNT, "tags": {"costCenter": "1"}}) is None
    # Mode Indexed: an extension resource (a role assignment) supports no tags and is not evaluated.
    grant = {"id": ACCOUNT["id"] + "/providers/Microsoft.Authorization/roleAssignments/a", "location": "westeurope",
             "type": "Microsoft.Authorization/roleAssignments", "name": "a"}  # fmt: skip
    assert evaluate_assignment(assignment, grant) is None


def test_effect_parameters_audit_deny_and_enforcement_mode() -> None:
    public = {**ACCOUNT, "properties": {"publicNetworkAccess": "Enabled"}}
    default = evaluate_assignment(_assignment(STORAGE_NO_PUBLIC_NETWORK, {}), public)
    assert default is not None and default.effect == "audit"  # the definition's defaultValue
    assert (
        evaluate_assignment(_assignment(STORAGE_NO_PUBLIC_NETWORK, {"effect": {"value": "Disabled"}}), public) is None
    )
    denied = _assignment(STORAGE_NO_PUBLIC_NETWORK, {"effect": {"value": "Deny"}}, mode="DoNotEnforce")
    assert evaluate_assignment(denied, public) is None
    log = PolicyLog()
    blob = _assignment(STORAGE_NO_PUBLIC_BLOB, {})
    stored = {blob["id"].lower(): blob}  # the world keys resources by lower-case ID
    assert judge({**ACCOUNT, "properties": {"allowBlobPublicAccess": True}}, stored, log) is None
    assert [rid for rid, _ in log.audits] == [ACCOUNT["id"]]


def test_not_scopes_leave_out_a_resource_and_its_children_only() -> None:
    # Excluded scopes (learn.microsoft.com/azure/governance/policy/concepts/assignment-structure): the assignment
    # judges everything in its scope but the resources named in notScopes and what lies beneath them.
    deny = _assignment(STORAGE_NO_PUBLIC_NETWORK, {"effect": {"value": "Deny"}})
    deny["properties"]["notScopes"] = [ACCOUNT["id"].upper()]  # IDs compare case-insensitively
    stored = {deny["id"].lower(): deny}
    public = {**ACCOUNT, "properties": {"publicNetworkAccess": "Enabled"}}
    assert judge(public, stored, PolicyLog()) is None
    other = {**public, "id": RG + "/providers/Microsoft.Storage/storageAccounts/sa10", "name": "sa10"}
    refusal = judge(other, stored, PolicyLog())
    assert refusal is not None and refusal.code == "RequestDisallowedByPolicy"


def test_allowed_locations_passes_global_and_denies_elsewhere() -> None:
    assignment = _assignment(ALLOWED_LOCATIONS, {"listOfAllowedLocations": {"value": ["westeurope"]}})
    assert evaluate_assignment(assignment, ACCOUNT) is None
    assert evaluate_assignment(assignment, {**ACCOUNT, "location": "global"}) is None
    assert evaluate_assignment(assignment, {**ACCOUNT, "location": "eastus"}) is not None


def _deploy(arm: ArmStandIn, name: str, *resources: dict[str, Any]) -> dict[str, Any]:
    d = Deployment(
        name=name, component="storage", scope="resourceGroup", resource_group="rg1", location="eastus2",
        template={"resources": list(resources)},
    )  # fmt: skip
    adapter = Arm(AzureClients(arm.subscription_id))
    adapter.submit(d, deployment_body(d, {}, {}))
    return finished(adapter, d)


def nsg(tags: dict[str, str]) -> dict[str, Any]:
    return {"type": "Microsoft.Network/networkSecurityGroups", "apiVersion": "2024-05-01", "name": "nsg1",
            "location": "eastus2", "tags": tags, "properties": {}}  # fmt: skip


def test_a_deny_reaches_the_client_as_request_disallowed_by_policy(adapter: Arm, arm: ArmStandIn) -> None:
    require = {
        "type": "Microsoft.Authorization/policyAssignments",
        "apiVersion": "2024-04-01",
        "name": "hpclz-require-tag-owner",
        "properties": {
            "policyDefinitionId": "/providers/Microsoft.Authorization/policyDefinitions/" + REQUIRE_TAG,
            "parameters": {"tagName": {"value": "owner"}},
        },
    }
    assert _deploy(arm, "policy", require)["properties"]["provisioningState"] == "Succeeded"
    refused = _deploy(arm, "untagged", nsg({}))
    inner = refused["properties"]["error"]["details"][0]["details"][0]
    assert inner["code"] == "RequestDisallowedByPolicy"
    assert inner["message"].startswith("Resource 'nsg1' was disallowed by policy. Policy identifiers: '[")
    assert '"policyAssignment":{"name":"hpclz-require-tag-owner"' in inner["message"]
    assert not any(k.endswith("/nsg1") for k in arm.world.resources)
    assert _deploy(arm, "tagged", nsg({"owner": "x"}))["properties"]["provisioningState"] == "Succeeded"
