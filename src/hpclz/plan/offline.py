"""Offline plan: the resources a rendered DeploymentPlan declares, against the last applied state.

No credentials and no network: what state recorded is taken as what Azure has. Drift made
outside hpclz shows only with `--what-if`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hpclz.plan import decode, policies
from hpclz.plan.assignments import is_role_assignment, key_of, maybe_same, pair_in_passes, surely_same
from hpclz.plan.attributes import attributes, masked, unchanged_count
from hpclz.plan.changeset import Action, ChangeSet, PropertyChange, ResourceChange, StateRef, Verdict, worst
from hpclz.plan.resources import DesiredResource, desired_resources, id_key, parent_key, resource_label
from hpclz.plan.unchanged import unchanged_deployments
from hpclz.render.model import DeploymentPlan
from hpclz.state.model import ResourceRecord, StateDocument


def diff_values(before: Any, after: Any, path: str = "") -> list[tuple[str, Action, Any, Any]]:
    """Property-level differences; lists of named objects (subnets, rules) are matched by name."""
    if isinstance(before, dict) and isinstance(after, dict):
        return _diff_keyed(before, after, lambda key: f"{path}.{key}" if path else str(key))
    if _named_list(before) and _named_list(after):
        old = {item["name"]: item for item in before}
        new = {item["name"]: item for item in after}
        return _diff_keyed(old, new, lambda name: f"{path}[{name}]")
    if before != after:
        return [(path, Action.MODIFY, before, after)]
    return []


def _diff_keyed(
    old: dict[Any, Any], new: dict[Any, Any], path_of: Callable[[Any], str]
) -> list[tuple[str, Action, Any, Any]]:
    out: list[tuple[str, Action, Any, Any]] = []
    for key in [*old, *(k for k in new if k not in old)]:
        sub = path_of(key)
        if key not in new:
            out.append((sub, Action.DELETE, old[key], None))
        elif key not in old:
            out.append((sub, Action.CREATE, None, new[key]))
        else:
            out.extend(diff_values(old[key], new[key], sub))
    return out


def _named_list(value: Any) -> bool:
    if not isinstance(value, list) or not value:
        return False
    names = [item.get("name") for item in value if isinstance(item, dict)]
    return len(names) == len(value) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def resource_change(
    rtype: str,
    name: str,
    rid: str,
    deployment: str,
    data_bearing: bool,
    before: Any,
    after: Any,
    secure: frozenset[str] = frozenset(),
) -> ResourceChange:
    """Classify one resource that exists on both sides: no change, in-place modify, or replace."""
    changes = []
    for path, kind, old, new in diff_values(before, after):
        verdict = policies.property_verdict(rtype, path, old, new, data_bearing, after)
        changes += _readable(path, kind, old, new, verdict)
    for change in changes:  # judged on the real values above; shown masked
        change.before = masked(rtype, change.path, change.before, secure)
        change.after = masked(rtype, change.path, change.after, secure)
    return classify(
        ResourceChange(
            id=rid,
            type=rtype,
            name=name,
            deployment=deployment,
            action=Action.NO_CHANGE,
            data_bearing=data_bearing,
            changes=changes,
            unchanged_attributes=unchanged_count(after, changes) if changes else 0,
        )
    )


def _readable(path: str, kind: Action, old: Any, new: Any, verdict: Verdict) -> list[PropertyChange]:
    """One property change; an encoded userData/customData becomes the changes inside it, same verdict."""
    inner = decode.readable(path, old, new) if kind is Action.MODIFY and decode.is_encoded(path) else None
    if not inner:
        return [PropertyChange(path=path, kind=kind, before=old, after=new, verdict=verdict)]
    return [
        PropertyChange(
            path=sub,
            kind=Action.CREATE if was is None else Action.DELETE if now is None else Action.MODIFY,
            before=was,
            after=now,
            verdict=verdict,
        )
        for sub, was, now in inner
    ]


def classify(change: ResourceChange) -> ResourceChange:
    """A resource's action and verdict follow from its worst property change."""
    if not change.changes:
        change.action = Action.NO_CHANGE
        change.verdict = Verdict()
        return change
    policy = worst([c.verdict.policy for c in change.changes])
    change.verdict = next(c.verdict for c in change.changes if c.verdict.policy is policy)
    change.action = Action.REPLACE if any(c.forces_replacement for c in change.changes) else Action.MODIFY
    return change


def offline_changeset(plan: DeploymentPlan, state: StateDocument | None) -> ChangeSet:
    changes = ChangeSet(mode="offline", landing_zone=plan.landing_zone, environment=plan.environment)
    desired = desired_resources(plan)
    if state is None:
        changes.resources = [create_change(d) for d in desired]
        return changes
    changes.state = StateRef.of(state)
    unchanged = unchanged_deployments(plan, state)
    matcher = _Matcher(state.resources)
    matches = matcher.match_all(desired)
    for d in desired:
        record = matches.get(id(d))
        if d.deployment in unchanged:
            # ARM applied exactly this template: nothing in it changed, even if state recorded it incompletely.
            changes.resources.append(_same(d, record))
        elif record is None:
            changes.resources.append(create_change(d))
        else:
            data = record.data_bearing or policies.is_data_bearing(d.type)
            before, after = comparable(record.properties, d.body)
            change = resource_change(d.type, d.name, record.id, d.deployment, data, before, after, d.secure)
            change.label = resource_label(d.type, d.name, d.id, d.body)
            changes.resources.append(change)
    # A record marked pending_delete is still in Azure whatever its deployment's hash says.
    changes.resources.extend(
        delete_change(r) for r in matcher.unmatched() if r.deployment not in unchanged or r.pending_delete
    )
    return changes


BODY_KEYS = frozenset(
    {"location", "tags", "sku", "kind", "zones", "identity", "plan", "extendedLocation", "properties", "existing"}
)


def comparable(recorded: dict[str, Any], body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """State may hold the whole resource body (sku, location, tags, properties) or only its `properties`.

    With only `properties` recorded, top-level fields such as `sku` cannot be compared offline: the
    config diff above still shows those edits, and `--what-if` compares them against Azure.
    """
    if not recorded:  # nothing recorded (deploy could not map it to the template): nothing to compare
        return {}, {}
    if set(recorded) <= BODY_KEYS and set(recorded) & {"properties", "location", "tags"}:
        return recorded, body
    return {"properties": recorded}, {"properties": body.get("properties", {})}


class _Matcher:
    """Finds the state record of each desired resource: by ID, then by type and name. A name that is an
    ARM expression (role assignments' `[guid(...)]`) cannot be evaluated offline: a role assignment is
    matched by what it means (scope, principal, role definition; `hpclz.plan.assignments`), and other
    expression-named resources pair with the remaining records of the same type, deployment and parent
    scope, in order."""

    def __init__(self, records: list[ResourceRecord]):
        self.records = records
        self.by_id = {id_key(r.id): r for r in records}
        # By name only within one resource group: a private DNS zone has the same name in every group.
        self.by_name = {(r.type.lower(), r.name.lower(), r.deployment, _group(r.id)): r for r in records}
        self.used: set[int] = set()

    def _take(self, record: ResourceRecord | None) -> ResourceRecord | None:
        if record is None or id(record) in self.used:
            return None
        self.used.add(id(record))
        return record

    def match_all(self, desired: list[DesiredResource]) -> dict[int, ResourceRecord]:
        found: dict[int, ResourceRecord] = {}
        for d in desired:
            record = self.by_id.get(id_key(d.id)) or self.by_name.get(
                (d.type.lower(), d.name.lower(), d.deployment, _group(d.id))
            )
            taken = self._take(record)
            if taken is not None:
                found[id(d)] = taken
        rest = [d for d in desired if id(d) not in found and (d.name.startswith("[") or is_role_assignment(d.type))]
        for d, record in pair_in_passes(rest, self.unmatched(), _TESTS):
            found[id(d)] = record
            self.used.add(id(record))
        return found

    def unmatched(self) -> list[ResourceRecord]:
        return [r for r in self.records if id(r) not in self.used]


def _group(rid: str) -> str:
    parts = id_key(rid).split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "resourcegroups" else ""


def _same_assignment(d: DesiredResource, record: ResourceRecord) -> bool:
    return surely_same(key_of(d.type, d.id, d.body), key_of(record.type, record.id, record.properties))


def _maybe_same_assignment(d: DesiredResource, record: ResourceRecord) -> bool:
    """The fallback for records that hold no body (deploy could not tell which rendered body was which)."""
    return maybe_same(key_of(d.type, d.id, d.body), key_of(record.type, record.id, record.properties))


def _parent(rid: str) -> str:
    return id_key(rid).rsplit("/", 1)[0]


def _same_slot(d: DesiredResource, record: ResourceRecord) -> bool:
    return (
        not is_role_assignment(d.type)
        and record.type.lower() == d.type.lower()
        and record.deployment == d.deployment
        and _parent(record.id) == parent_key(d.id, d.name)
    )


_TESTS = (_same_assignment, _maybe_same_assignment, _same_slot)


def create_change(d: DesiredResource) -> ResourceChange:
    return ResourceChange(
        id=d.id,
        type=d.type,
        name=d.name,
        label=resource_label(d.type, d.name, d.id, d.body),
        deployment=d.deployment,
        action=Action.CREATE,
        data_bearing=policies.is_data_bearing(d.type),
        verdict=policies.create_verdict(d.type),
        attributes=attributes(d.type, d.body, d.secure),
    )


def _same(d: DesiredResource, record: ResourceRecord | None) -> ResourceChange:
    data_bearing = policies.is_data_bearing(d.type) or bool(record and record.data_bearing)
    return ResourceChange(
        id=record.id if record else d.id,
        type=d.type,
        name=d.name,
        label=resource_label(d.type, d.name, d.id, d.body),
        deployment=d.deployment,
        action=Action.NO_CHANGE,
        data_bearing=data_bearing,
    )


def delete_change(record: ResourceRecord) -> ResourceChange:
    data = record.data_bearing or policies.is_data_bearing(record.type)
    return ResourceChange(
        id=record.id,
        type=record.type,
        name=record.name,
        label=resource_label(record.type, record.name, record.id, record.properties),
        deployment=record.deployment,
        action=Action.DELETE,
        data_bearing=data,
        verdict=policies.delete_verdict(record.type, data),
    )
