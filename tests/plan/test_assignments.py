"""A role assignment's identity read from what render emits and from what Azure or state holds."""

from __future__ import annotations

from typing import Any

from hpclz.plan.assignments import AssignmentKey, assignment_key, pair_in_passes, static_id
from hpclz.plan.resources import desired_resources
from hpclz.render.build import build_plan
from tests.plan.support import preset

RG = "/subscriptions/{subscription}/resourceGroups/rg-energy-compute-prod-scus"
ARM_RG = "/subscriptions/0000-real/resourceGroups/RG-Energy-Compute-Prod-Scus"
ROLE = "Microsoft.Authorization/roleAssignments"
READER = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
GROUP = "dde85349-5401-4e33-9197-54cf1fcb7d7b"
SCHEDULER = (
    "[reference(resourceId('rg-energy-management-prod-scus', 'Microsoft.ManagedIdentity/userAssignedIdentities', "
    "'id-energy-scheduler-prod-scus'), '2023-01-31').principalId]"
)


def rendered(principal: str, role: str = READER) -> dict[str, Any]:
    return {
        "properties": {
            "roleDefinitionId": f"[subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '{role}')]",
            "principalId": principal,
            "principalType": "Group",
        }
    }


def test_rendered_and_azure_forms_of_one_assignment_are_the_same() -> None:
    mine = assignment_key(f"{RG}/providers/{ROLE}/[guid(resourceGroup().id, '{GROUP}', '{READER}')]", rendered(GROUP))
    azure = assignment_key(
        f"{ARM_RG}/providers/{ROLE}/0f4b6a6e-33a8-5d6a-9d57-7d3b4a6b0d11",
        {
            "roleDefinitionId": f"/subscriptions/0000-real/providers/Microsoft.Authorization/roleDefinitions/{READER}",
            "principalId": GROUP.upper(),
        },
    )
    assert mine == AssignmentKey("/resourcegroups/rg-energy-compute-prod-scus", f"guid:{GROUP}", f"guid:{READER}")
    assert mine.same(azure)


def test_another_principal_or_role_or_scope_is_another_assignment() -> None:
    rid = f"{RG}/providers/{ROLE}/x"
    key = assignment_key(rid, rendered(GROUP))
    for other in (
        assignment_key(rid, rendered("5f1e0c6a-1b2c-4d3e-8f9a-0b1c2d3e4f5a")),
        assignment_key(rid, rendered(GROUP, role="b24988ac-6180-42a0-ab88-20f7382dd24c")),
        assignment_key(f"{RG}/providers/Microsoft.Storage/storageAccounts/st/providers/{ROLE}/x", rendered(GROUP)),
    ):
        assert not key.same(other) and not key.compatible(other)


def test_a_managed_identity_is_known_by_its_id_and_only_arm_knows_its_guid() -> None:
    rid = f"{RG}/providers/{ROLE}/x"
    key = assignment_key(rid, rendered(SCHEDULER))
    assert key.principal == (
        "identity:/resourcegroups/rg-energy-management-prod-scus/providers/"
        "microsoft.managedidentity/userassignedidentities/id-energy-scheduler-prod-scus"
    )
    resolved = assignment_key(rid, rendered("11111111-2222-4333-8444-555555555555"))
    assert key.compatible(resolved) and not key.same(resolved)


def test_a_body_that_says_nothing_is_compatible_with_anything_at_its_scope_only() -> None:
    unknown = assignment_key(f"{RG}/providers/{ROLE}/x", {})
    assert unknown.principal is None and unknown.role is None
    assert unknown.compatible(assignment_key(f"{RG}/providers/{ROLE}/y", rendered(GROUP)))
    assert not unknown.same(assignment_key(f"{RG}/providers/{ROLE}/y", rendered(GROUP)))
    assert not unknown.compatible(assignment_key(f"/subscriptions/s/resourceGroups/other/providers/{ROLE}/y", {}))


def test_every_rendered_assignment_has_a_fully_known_distinct_key() -> None:
    for name in ("energy", "ai-training", "finance", "manufacturing"):
        keys = [assignment_key(d.id, d.body) for d in desired_resources(build_plan(preset(name))) if d.type == ROLE]
        assert keys, name
        assert all(k.principal and k.role and k.role.startswith("guid:") for k in keys), name
        assert all(not k.principal.startswith("expr:") for k in keys if k.principal), name
        assert len(set(keys)) == len(keys), name


def test_static_ids_of_the_calls_render_writes() -> None:
    assert static_id("[resourceId('Microsoft.Storage/storageAccounts', 'st1')]") == (
        "/providers/microsoft.storage/storageaccounts/st1"
    )
    assert static_id("[resourceId('rg', 'Microsoft.NetApp/netAppAccounts/capacityPools', 'a', 'p')]") == (
        "/resourcegroups/rg/providers/microsoft.netapp/netappaccounts/a/capacitypools/p"
    )
    assert static_id(f"[subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '{READER}')]") == (
        f"/providers/microsoft.authorization/roledefinitions/{READER}"
    )
    assert static_id("[parameters('principal')]") is None


def test_stricter_passes_pair_first_and_weaker_ones_take_the_rest_in_order() -> None:
    lefts = ["a1", "b1", "c1"]
    rights = ["c2", "x2", "a2"]
    pairs = pair_in_passes(lefts, rights, [lambda left, right: left[0] == right[0], lambda _left, _right: True])
    assert pairs == [("a1", "a2"), ("c1", "c2"), ("b1", "x2")]
