"""State records the whole rendered body of every resource ARM applied, so the offline plan sees edits to
sku, tags and other top-level fields, and child resources (blob containers) match what was applied."""

from __future__ import annotations

from pathlib import Path

from hpclz.plan.changeset import Action, ResourceChange
from hpclz.services.plan import plan
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
    changes = plan(zone).changes
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
    assert set(containers) == {"datasets", "checkpoints", "cyclecloud", "datasets-logs"}
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
    assert len(containers) == 4 and {r.action for r in containers} == {Action.NO_CHANGE}


def test_tag_edit_modifies_tags_and_leaves_containers_alone(arm: ArmStandIn, zone: Path, run_cli) -> None:
    _deployed(zone, run_cli)
    _edit(zone, "owner: ml-platform", "owner: ml-research")
    changes = _offline(zone)
    account = next(r for r in changes if r.type == ACCOUNT)
    assert account.action is Action.MODIFY
    assert [(c.path, c.before, c.after) for c in account.changes] == [("tags.owner", "ml-platform", "ml-research")]
    assert {r.action for r in changes if r.type == CONTAINER} == {Action.NO_CHANGE}
    assert Action.CREATE not in {r.action for r in changes} and Action.REPLACE not in {r.action for r in changes}
