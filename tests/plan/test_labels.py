"""Role assignments read as `role -> principal at scope` in `hpclz plan`, while their IDs still decide the diff."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from hpclz.cli.views.changeset import print_changeset
from hpclz.plan.changeset import Action, ChangeSet
from hpclz.plan.config_diff import config_changes
from hpclz.plan.offline import offline_changeset
from hpclz.plan.resources import desired_resources, resource_label
from hpclz.plan.whatif import whatif_changeset
from hpclz.render.build import build_plan
from tests.plan.support import applied_state, edited, preset

ROLE_TYPE = "Microsoft.Authorization/roleAssignments"
NEW_READER = "5f1e0c6a-1b2c-4d3e-8f9a-0b1c2d3e4f5a"
READER_ID = "acdd72a7-3385-48ef-bd42-f606fba81ae7"


def _text(changes: ChangeSet) -> str:
    console = Console(width=300, no_color=True, record=True, force_terminal=False)
    print_changeset(console, changes)
    return console.export_text()


def _plan(edit: Any, *, properties_only: bool = False) -> ChangeSet:
    base = preset("energy")
    state = applied_state(base, properties_only=properties_only)
    config = edited(base, edit)
    changes = offline_changeset(build_plan(config), state)
    changes.config_changes = config_changes(state.applied_config, config)
    return changes


def _add_reader(d: dict[str, Any]) -> None:
    d["identity"]["groups"]["readers"].append(NEW_READER)


def _drop_readers(d: dict[str, Any]) -> None:
    d["identity"]["groups"]["readers"] = []


def test_every_rendered_role_assignment_gets_a_label_from_its_properties() -> None:
    labels = {
        resource_label(d.type, d.name, d.id, d.body)
        for d in desired_resources(build_plan(preset("energy")))
        if d.type == ROLE_TYPE
    }
    assert "Reader -> group dde85349… at rg-energy-network-prod-scus" in labels
    assert (
        "Virtual Machine Contributor -> identity id-energy-scheduler-prod-scus at rg-energy-compute-prod-scus" in labels
    )
    assert "Storage Blob Data Contributor -> identity id-energy-compute-prod-scus at checkpoints" in labels
    assert "Storage Blob Data Reader -> identity id-energy-locker-prod-scus at stenergyccprodscuseb80" in labels
    assert not any(label.startswith("[") for label in labels)


def test_a_new_assignment_prints_its_label_and_keeps_its_arm_name_and_id() -> None:
    changes = _plan(_add_reader)
    created = [r for r in changes.resources if r.action is Action.CREATE]
    assert created and all(r.type == ROLE_TYPE for r in created)
    for change in created:
        assert change.name.startswith("[guid(") and change.id.endswith(change.name)
        assert change.label.startswith(f"Reader -> group {NEW_READER[:8]}… at rg-energy-")
    text = _text(changes)
    assert f"+ {ROLE_TYPE} Reader -> group 5f1e0c6a… at rg-energy-network-prod-scus" in text
    assert "[guid(" not in text


def test_a_removed_assignment_is_labelled_from_the_state_record() -> None:
    """State written by deploy holds only `properties`, Azure's GUID name and the real role definition ID."""
    changes = _plan(_drop_readers, properties_only=True)
    deleted = [r for r in changes.resources if r.action is Action.DELETE]
    assert deleted and all(r.type == ROLE_TYPE for r in deleted)
    assert {r.label for r in deleted} >= {"Reader -> group dde85349… at rg-energy-storage-prod-scus"}
    assert all(not r.name.startswith("Reader") for r in deleted)  # the name stays the identity
    assert f"- {ROLE_TYPE} Reader -> group dde85349… at rg-energy-network-prod-scus" in _text(changes)


def test_unchanged_plan_still_matches_every_assignment() -> None:
    base = preset("energy")
    changes = offline_changeset(build_plan(base), applied_state(base, properties_only=True))
    assert not changes.has_changes


def test_what_if_assignments_are_labelled_from_their_body() -> None:
    rid = (
        "/subscriptions/s/resourceGroups/rg-energy-compute-prod-scus/providers/Microsoft.Authorization/"
        "roleAssignments/0f4b6a6e-33a8-5d6a-9d57-7d3b4a6b0d11"
    )
    after = {
        "type": ROLE_TYPE,
        "properties": {
            "roleDefinitionId": f"/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/{READER_ID}",
            "principalId": "dde85349-5401-4e33-9197-54cf1fcb7d7b",
            "principalType": "Group",
        },
    }
    body = {
        "status": "Succeeded",
        "properties": {"changes": [{"resourceId": rid, "changeType": "Create", "after": after}]},
    }
    changes = whatif_changeset({"d": body}, landing_zone="energy", environment="prod")
    (change,) = changes.resources
    assert change.name == "0f4b6a6e-33a8-5d6a-9d57-7d3b4a6b0d11"
    assert change.label == "Reader -> group dde85349… at rg-energy-compute-prod-scus"


def test_other_resources_and_unknown_roles_fall_back_to_what_is_known() -> None:
    assert resource_label("Microsoft.Network/virtualNetworks", "vnet-a", "/x", {"properties": {}}) == "vnet-a"
    rid = "/subscriptions/s/providers/Microsoft.Authorization/roleAssignments/abc"
    custom = {"roleDefinitionId": "/providers/roleDefinitions/11111111-2222-4333-8444-555555555555", "principalId": "p"}
    assert resource_label(ROLE_TYPE, "abc", rid, custom) == "role 11111111… -> p at subscription"
    assert resource_label(ROLE_TYPE, "abc", rid, {"properties": {}}) == "abc"


def test_child_resources_are_labelled_by_their_full_name() -> None:
    """Every private endpoint has a DNS zone group named `default`: the label names its parent too."""
    rid = (
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/pep-blob"
        "/privateDnsZoneGroups/default"
    )
    label = resource_label("Microsoft.Network/privateEndpoints/privateDnsZoneGroups", "default", rid, None)
    assert label == "pep-blob/default"
    top = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet1"
    assert resource_label("Microsoft.Network/virtualNetworks", "vnet1", top, None) == "vnet1"
    expression = "[resourceId('Microsoft.Network/privateEndpoints/privateDnsZoneGroups', 'a', 'b')]"
    assert resource_label("Microsoft.Network/privateEndpoints/privateDnsZoneGroups", "b", expression, None) == "b"


def test_labels_are_unique_and_never_an_arm_expression() -> None:
    """A diagnostic setting on three resources, a policy assignment in five groups: each line says where it sits;
    a role assignment to a resource's own identity names the resource, not the template expression."""
    config = preset("energy")
    changes = offline_changeset(build_plan(config), None)
    changes.unique_labels()
    titles = [f"{r.type} {r.label or r.name}" for r in changes.resources]
    assert len(titles) == len(set(titles)), sorted(t for t in titles if titles.count(t) > 1)
    assert not [t for t in titles if "[" in t or "reference(" in t]
    diag = sorted(r.label for r in changes.resources if r.type == "Microsoft.Insights/diagnosticSettings")
    assert "hpclz-audit at subscription" in diag and any(d.startswith("hpclz-audit at kv-energy-") for d in diag)
    assert any("identity of grafana amg-energy-" in (r.label or "") for r in changes.resources)


def test_an_impact_line_names_what_it_is_about() -> None:
    config = preset("ai-training")
    changes = offline_changeset(build_plan(config), None)
    changes.unique_labels()
    text = _text(changes)
    line = next(row for row in text.splitlines() if "agree it with the subscription's owner" in row)
    assert line.startswith("Impact: Security/pricings ")  # the Defender plans it is about
