"""Group edits against the last applied state: role assignments are matched by (scope, principal, role),
so exactly the assignments of the group that came or went change, whatever order state holds them in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from rich.console import Console

from hpclz.cli.views.changeset import print_changeset
from hpclz.config.root import LandingZoneConfig
from hpclz.plan.changeset import Action, ChangeSet
from hpclz.plan.config_diff import config_changes
from hpclz.plan.offline import offline_changeset
from hpclz.render.build import build_plan
from hpclz.state.model import StateDocument
from tests.plan.support import applied_state, edited, preset

ROLE_TYPE = "Microsoft.Authorization/roleAssignments"
A = "dde85349-5401-4e33-9197-54cf1fcb7d7b"  # the energy preset's reader
B = "0c7f3a55-2e4b-4c1d-9a8e-6f5d4c3b2a19"
C = "5f1e0c6a-1b2c-4d3e-8f9a-0b1c2d3e4f5a"
U = "9b903f64-0832-4f6c-bfd4-d0f45b654b0a"  # the energy preset's user group
W = "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d"
GROUPS = [f"rg-energy-{area}-prod-scus" for area in ("network", "management", "storage", "monitoring", "compute")]


def reader_everywhere(group: str) -> set[str]:
    return {f"Reader -> group {group[:8]}… at {rg}" for rg in GROUPS}


def user_roles(group: str) -> set[str]:
    return {
        # No VM login role for users: the CycleCloud server is the compute group's only VM (HPCLZ-IDN-011).
        # resource scopes: each data container on its own, never the CycleCloud locker (HPCLZ-TPL-050)
        f"Storage Blob Data Contributor -> group {group[:8]}… at seismic-archive",
        f"Storage Blob Data Contributor -> group {group[:8]}… at checkpoints",
        # Azure Bastion's required roles for a tunnel (src/hpclz/render/roles.py bastion_readers): the host, and the
        # compute group with the CycleCloud server, the portal, the login nodes and their NICs.
        f"Reader -> group {group[:8]}… at bas-energy-prod-scus",
        f"Reader -> group {group[:8]}… at rg-energy-compute-prod-scus",
    }


def base() -> LandingZoneConfig:
    """The energy preset with two reader groups and two user groups."""

    def two_each(d: dict[str, Any]) -> None:
        d["identity"]["groups"]["readers"] = [A, B]
        d["identity"]["groups"]["users"] = [U, W]

    return edited(preset("energy"), two_each)


def groups(attr: str, value: list[str]) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d["identity"]["groups"][attr] = value

    return edit


@dataclass
class Row:
    edit: Callable[[dict[str, Any]], None]
    deleted: set[str]
    created: set[str]


TABLE: dict[str, Row] = {
    "remove the first reader": Row(groups("readers", [B]), reader_everywhere(A), set()),
    "remove the last reader": Row(groups("readers", [A]), reader_everywhere(B), set()),
    "add a reader at the end": Row(groups("readers", [A, B, C]), set(), reader_everywhere(C)),
    "add a reader at the front": Row(groups("readers", [C, A, B]), set(), reader_everywhere(C)),
    "reorder the readers": Row(groups("readers", [B, A]), set(), set()),
    "swap a reader for another": Row(groups("readers", [C, B]), reader_everywhere(A), reader_everywhere(C)),
    "remove the first user group (group and resource scopes)": Row(groups("users", [W]), user_roles(U), set()),
    "reorder the user groups": Row(groups("users", [W, U]), set(), set()),
}


def whole_bodies(config: LandingZoneConfig) -> StateDocument:
    return applied_state(config)


def guid_names(config: LandingZoneConfig) -> StateDocument:
    """Deploy's shape for older states: only `properties`, assignments named by Azure's GUID."""
    return applied_state(config, properties_only=True)


def guid_names_in_another_order(config: LandingZoneConfig) -> StateDocument:
    """ARM may list the assignments at a scope in another order than the template declares them."""
    state = applied_state(config, properties_only=True)
    others = [r for r in state.resources if r.type != ROLE_TYPE]
    state.resources = others + [r for r in state.resources if r.type == ROLE_TYPE][::-1]
    return state


STATES = {f.__name__: f for f in (whole_bodies, guid_names, guid_names_in_another_order)}


def plan_for(
    edit: Callable[[dict[str, Any]], None], make_state: Callable[[LandingZoneConfig], StateDocument]
) -> ChangeSet:
    before = base()
    state = make_state(before)
    after = edited(before, edit)
    changes = offline_changeset(build_plan(after), state)
    changes.config_changes = config_changes(state.applied_config, after)
    return changes


@pytest.mark.parametrize("shape", sorted(STATES))
@pytest.mark.parametrize("case", sorted(TABLE))
def test_group_edits_touch_exactly_that_groups_assignments(case: str, shape: str) -> None:
    row = TABLE[case]
    changes = plan_for(row.edit, STATES[shape])
    assert {(r.action, r.label) for r in changes.changed_resources} == {
        *((Action.DELETE, label) for label in row.deleted),
        *((Action.CREATE, label) for label in row.created),
    }
    assert all(r.type == ROLE_TYPE for r in changes.changed_resources)
    assert changes.summary.change == changes.summary.replace == 0


@pytest.mark.parametrize("case", ["reorder the readers", "reorder the user groups"])
def test_a_reordered_group_list_is_no_change_at_all(case: str) -> None:
    changes = plan_for(TABLE[case].edit, guid_names)
    assert changes.config_changes == []
    assert not changes.has_changes


def test_a_removed_reader_prints_as_destroyed_and_nothing_as_updated() -> None:
    changes = plan_for(TABLE["remove the first reader"].edit, guid_names_in_another_order)
    assert [(c.path, c.kind) for c in changes.config_changes] == [("identity.groups.readers", Action.MODIFY)]
    console = Console(width=300, no_color=True, record=True, force_terminal=False)
    print_changeset(console, changes)
    text = console.export_text()
    actions = text.split("hpclz will perform the following actions:")[1]
    for rg in GROUPS:
        assert f"- {ROLE_TYPE} Reader -> group {A[:8]}… at {rg}" in actions
    assert B[:8] not in actions and "  ~ " not in actions
    assert "Plan: 0 to add, 0 to change, 0 to replace, 5 to destroy." in text


def test_a_moved_group_keeps_its_description_so_nothing_changes_and_nothing_is_noise() -> None:
    """B moves from readers[1] to readers[0]: its assignments' descriptions name the group, not the position."""
    changes = plan_for(TABLE["remove the first reader"].edit, whole_bodies)
    kept = [r for r in changes.resources if r.type == ROLE_TYPE and r.label in reader_everywhere(B)]
    assert len(kept) == len(GROUPS) and {r.action for r in kept} == {Action.NO_CHANGE}
    assert [p for r in kept for p in [*r.changes, *r.noise]] == []
    console = Console(width=300, no_color=True, record=True, force_terminal=False)
    print_changeset(console, changes)
    assert "filtered as noise" not in console.export_text()


def test_descriptions_name_the_principal_not_the_list_position() -> None:
    state = whole_bodies(base())
    descriptions = {r.properties["properties"]["description"] for r in state.resources if r.type == ROLE_TYPE}
    assert f"hpclz: Reader for identity.groups.readers -> {B}" in descriptions
    assert f"hpclz: Storage Blob Data Contributor for identity.groups.users -> {W}" in descriptions
    assert not [d for d in descriptions if "[" in d]


def diffed(state: StateDocument) -> StateDocument:
    """A state whose deployments were applied from other templates: every resource is diffed, none skipped."""
    for record in state.deployments.values():
        record.template_hash = "applied-from-another-template"
    return state


def test_a_changed_description_that_is_not_an_index_is_still_a_modify() -> None:
    state = diffed(whole_bodies(base()))
    record = next(r for r in state.resources if r.type == ROLE_TYPE)
    record.properties["properties"]["description"] = "granted by hand"
    changes = offline_changeset(build_plan(base()), state)
    (changed,) = changes.changed_resources
    assert (changed.id, changed.action) == (record.id, Action.MODIFY)
    assert [c.path for c in changed.changes] == ["properties.description"] and not changed.noise


def test_assignments_recorded_without_a_body_still_pair_by_scope_in_order() -> None:
    """Deploy could not tell ARM's IDs apart (no properties returned): nothing to compare, nothing spurious."""
    state = diffed(guid_names(base()))
    for record in state.resources:
        if record.type == ROLE_TYPE:
            record.properties = {}
    changes = offline_changeset(build_plan(base()), state)
    assert changes.changed_resources == []
    assert {r.id for r in changes.resources if r.type == ROLE_TYPE} == {
        r.id for r in state.resources if r.type == ROLE_TYPE
    }


def test_the_delegator_grant_plans_as_one_create_on_a_zone_applied_before_it() -> None:
    """A zone applied before the compute identity held Storage Blob Delegator on the data account: the new render adds
    that one role assignment and replaces nothing (an assignment's name is guid(scope, principal, role), so every
    other assignment keeps its name)."""
    config = preset("energy")
    before = build_plan(config)
    (storage,) = [d for d in before.deployments if d.component == "storage"]
    delegator = "hpclz: Storage Blob Delegator for identity.managed_identities.compute"
    kept = [r for r in storage.template["resources"] if r.get("properties", {}).get("description") != delegator]
    assert len(kept) == len(storage.template["resources"]) - 1
    storage.template["resources"] = kept
    changes = offline_changeset(build_plan(config), applied_state(config, before))
    assert [(r.action, r.type, r.label) for r in changes.changed_resources] == [
        (
            Action.CREATE,
            ROLE_TYPE,
            "Storage Blob Delegator -> identity id-energy-compute-prod-scus at stenergyprodscuseb80",
        )
    ]
    assert changes.summary.change == changes.summary.replace == changes.summary.destroy == 0
