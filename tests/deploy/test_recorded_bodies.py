"""State records the whole rendered body of every resource ARM applied, so the offline plan sees edits to
sku, tags and other top-level fields, and child resources (blob containers) match what was applied."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from hpclz.plan.assignments import role_key, static_id
from hpclz.plan.changeset import Action, ResourceChange
from hpclz.services.plan import PlanOptions, plan
from tests.deploy.conftest import state_of
from tests.support.arm_standin import ArmStandIn

ACCOUNT = "Microsoft.Storage/storageAccounts"
CONTAINER = "Microsoft.Storage/storageAccounts/blobServices/containers"


def _deployed(zone: Path, run_cli) -> None:
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr + result.stdout


def _edit(zone: Path, old: str, new: str) -> None:
    text = zone.read_text()
    assert old in text
    zone.write_text(text.replace(old, new))


def _offline(zone: Path) -> list[ResourceChange]:
    changes = plan(PlanOptions(zone)).payload.changes
    assert changes is not None and changes.mode == "offline"
    return changes.resources


def test_state_holds_whole_bodies_and_child_resources(arm: ArmStandIn, zone: Path, run_cli) -> None:
    _deployed(zone, run_cli)
    records = state_of(zone)["resources"]
    account = next(r for r in records if r["type"] == ACCOUNT)
    assert account["properties"]["sku"] == {"name": "Standard_ZRS"}
    assert account["properties"]["location"] == "eastus2" and account["properties"]["tags"]["owner"] == "ml-platform"
    assert "properties" in account["properties"] and account["properties"]["kind"]
    containers = {r["name"]: r for r in records if r["type"] == CONTAINER}
    # The data account's containers, and CycleCloud's locker and the hpclz wheel in the locker account.
    assert set(containers) == {"datasets", "checkpoints", "datasets-logs", "cyclecloud", "hpclz"}
    assert all(r["data_bearing"] and r["api_version"] and "properties" in r["properties"] for r in containers.values())
    zone_groups = [r for r in records if r["type"] == "Microsoft.Network/privateEndpoints/privateDnsZoneGroups"]
    assert zone_groups and all(r["properties"]["properties"]["privateDnsZoneConfigs"] for r in zone_groups)


def test_redeployed_config_plans_no_change(arm: ArmStandIn, zone: Path, run_cli) -> None:
    _deployed(zone, run_cli)
    assert [(r.type, r.name, r.action) for r in _offline(zone) if r.action is not Action.NO_CHANGE] == []


def test_replication_edit_is_a_storage_modify_and_containers_stay(arm: ArmStandIn, zone: Path, run_cli) -> None:
    _deployed(zone, run_cli)
    _edit(zone, "replication: ZRS", "replication: LRS")
    changes = _offline(zone)
    moved = [r for r in changes if r.action is not Action.NO_CHANGE]
    assert [(r.type, r.action) for r in moved] == [(ACCOUNT, Action.MODIFY)]
    assert [(c.path, c.before, c.after) for c in moved[0].changes] == [("sku.name", "Standard_ZRS", "Standard_LRS")]
    containers = [r for r in changes if r.type == CONTAINER]
    assert len(containers) == 5 and {r.action for r in containers} == {Action.NO_CHANGE}


def test_tag_edit_modifies_tags_and_leaves_containers_alone(arm: ArmStandIn, zone: Path, run_cli) -> None:
    _deployed(zone, run_cli)
    _edit(zone, "owner: ml-platform", "owner: ml-research")
    changes = _offline(zone)
    account = next(r for r in changes if r.type == ACCOUNT)
    assert account.action is Action.MODIFY
    assert [(c.path, c.before, c.after) for c in account.changes] == [("tags.owner", "ml-platform", "ml-research")]
    assert {r.action for r in changes if r.type == CONTAINER} == {Action.NO_CHANGE}
    assert Action.CREATE not in {r.action for r in changes} and Action.REPLACE not in {r.action for r in changes}


ROLE = "Microsoft.Authorization/roleAssignments"
READER_A = "dde85349-5401-4e33-9197-54cf1fcb7d7b"
READER_B = "0c7f3a55-2e4b-4c1d-9a8e-6f5d4c3b2a19"
READER_C = "5f1e0c6a-1b2c-4d3e-8f9a-0b1c2d3e4f5a"


def _readers(zone: Path, *groups: str) -> None:
    text = zone.read_text()
    start = text.index("    readers: [")
    end = text.index("]", start) + 1
    zone.write_text(text[:start] + f"    readers: [{', '.join(groups)}]" + text[end:])


def test_reader_group_edits_change_exactly_that_groups_assignments(arm: ArmStandIn, zone: Path, run_cli) -> None:
    """Deploy with two reader groups; the offline plan then names exactly the assignments a group edit adds
    or removes, matched by (scope, principal, role) against what deploy recorded under Azure's GUID names."""
    _readers(zone, READER_A, READER_B)
    _deployed(zone, run_cli)
    recorded = [r for r in state_of(zone)["resources"] if r["type"] == ROLE]
    assert recorded and all(not r["name"].startswith("[") for r in recorded)
    assert all({"principalId", "roleDefinitionId"} <= set(r["properties"]["properties"]) for r in recorded)
    readers_of_a = [r for r in recorded if r["properties"]["properties"]["principalId"] == READER_A]
    assert len(readers_of_a) >= 5  # Reader on every landing-zone resource group

    _readers(zone, READER_B)
    removed = [r for r in _offline(zone) if r.action is not Action.NO_CHANGE]
    assert sorted((r.action, r.id) for r in removed) == sorted((Action.DELETE, r["id"]) for r in readers_of_a)

    _readers(zone, READER_B, READER_A)
    assert not plan(PlanOptions(zone)).payload.changes.has_changes  # type: ignore[union-attr]

    _readers(zone, READER_A, READER_B, READER_C)
    added = [r for r in _offline(zone) if r.action is not Action.NO_CHANGE]
    assert {r.action for r in added} == {Action.CREATE} and len(added) == len(readers_of_a)
    assert all(r.type == ROLE and r.label.startswith(f"Reader -> group {READER_C[:8]}…") for r in added)


def _reversed(ids: list[str]) -> list[str]:
    return ids[::-1]


def _shuffled(ids: list[str]) -> list[str]:
    random.Random(7).shuffle(ids)
    return ids


def _principal(arm: ArmStandIn, rendered: str, assignment_id: str) -> str | None:
    """The principal a rendered body names: a group's GUID, or the GUID of the managed identity it references
    (a resourceId() without a group names one in the assignment's own group)."""
    identity = static_id(rendered) if rendered.startswith("[") else None
    if identity is None:
        return rendered
    if not identity.startswith("/resourcegroups/"):
        identity = f"/resourcegroups/{assignment_id.split('/')[4]}{identity}"
    found = arm.world.lookup(f"/subscriptions/{arm.subscription_id}{identity}") or {}
    if "'full').identity.principalid" in rendered.lower():  # a resource's own system-assigned identity (Grafana)
        return found.get("identity", {}).get("principalId")
    return found.get("properties", {}).get("principalId")


@pytest.mark.parametrize("order", [_reversed, _shuffled], ids=["reversed", "shuffled"])
def test_assignments_listed_out_of_template_order_keep_their_own_bodies(
    arm: ArmStandIn, zone: Path, run_cli, order: Callable[[list[str]], list[str]]
) -> None:
    """ARM promises no order in outputResources: deploy reads each assignment back, so the body recorded
    under an ID grants the role to the principal that Azure's assignment with that ID does."""
    arm.world.output_order = order
    _readers(zone, READER_A, READER_B)
    _deployed(zone, run_cli)
    recorded = [r for r in state_of(zone)["resources"] if r["type"] == ROLE]
    rendered = [r["properties"]["properties"] for r in recorded]
    assert {p["principalId"] for p in rendered} >= {READER_A, READER_B}
    assert any(p["principalId"].startswith("[reference(") for p in rendered)  # managed identities too
    for record, body in zip(recorded, rendered, strict=True):
        actual = arm.world.lookup(record["id"])
        assert actual is not None, record["id"]
        assert _principal(arm, body["principalId"], record["id"]) == actual["properties"]["principalId"], record["id"]
        assert role_key(body["roleDefinitionId"]) == role_key(actual["properties"]["roleDefinitionId"]), record["id"]
