"""Offline plan: the resources a rendered DeploymentPlan declares, against the last applied state.

No credentials and no network: what state recorded is taken as what Azure has. Drift made
outside hpclz shows only with `--what-if`.
"""

from __future__ import annotations

from typing import Any

from hpclz.plan import policies
from hpclz.plan.changeset import Action, ChangeSet, PropertyChange, ResourceChange, StateRef, Verdict, worst
from hpclz.plan.resources import DesiredResource, desired_resources, id_key
from hpclz.render.plan import DeploymentPlan
from hpclz.state.model import DeploymentStatus, ResourceRecord, StateDocument


def diff_values(before: Any, after: Any, path: str = "") -> list[tuple[str, Action, Any, Any]]:
    """Property-level differences; lists of named objects (subnets, rules) are matched by name."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[tuple[str, Action, Any, Any]] = []
        for key in [*before, *(k for k in after if k not in before)]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in after:
                out.append((sub, Action.DELETE, before[key], None))
            elif key not in before:
                out.append((sub, Action.CREATE, None, after[key]))
            else:
                out.extend(diff_values(before[key], after[key], sub))
        return out
    if _named_list(before) and _named_list(after):
        old = {item["name"]: item for item in before}
        new = {item["name"]: item for item in after}
        return _diff_named(old, new, path)
    if before != after:
        return [(path, Action.MODIFY, before, after)]
    return []


def _diff_named(old: dict[str, Any], new: dict[str, Any], path: str) -> list[tuple[str, Action, Any, Any]]:
    out: list[tuple[str, Action, Any, Any]] = []
    for name in [*old, *(n for n in new if n not in old)]:
        sub = f"{path}[{name}]"
        if name not in new:
            out.append((sub, Action.DELETE, old[name], None))
        elif name not in old:
            out.append((sub, Action.CREATE, None, new[name]))
        else:
            out.extend(diff_values(old[name], new[name], sub))
    return out


def _named_list(value: Any) -> bool:
    if not isinstance(value, list) or not value:
        return False
    names = [item.get("name") for item in value if isinstance(item, dict)]
    return len(names) == len(value) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def resource_change(
    rtype: str, name: str, rid: str, deployment: str, data_bearing: bool, before: Any, after: Any
) -> ResourceChange:
    """Classify one resource that exists on both sides: no change, in-place modify, or replace."""
    changes = [
        PropertyChange(
            path=path,
            kind=kind,
            before=old,
            after=new,
            verdict=policies.property_verdict(rtype, path, old, new, data_bearing),
        )
        for path, kind, old, new in diff_values(before, after)
    ]
    return classify(
        ResourceChange(
            id=rid,
            type=rtype,
            name=name,
            deployment=deployment,
            action=Action.NO_CHANGE,
            data_bearing=data_bearing,
            changes=changes,
        )
    )


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
        changes.resources = [_create(d) for d in desired]
        return changes
    changes.state = StateRef(lineage=state.lineage, serial=state.serial)
    recorded = {id_key(r.id): r for r in state.resources}
    by_name = {(r.type.lower(), r.name.lower(), r.deployment): r for r in state.resources}
    unchanged = _unchanged_deployments(plan, state)
    seen: set[int] = set()
    for d in desired:
        record = recorded.get(id_key(d.id)) or by_name.get((d.type.lower(), d.name.lower(), d.deployment))
        if record is None:
            changes.resources.append(_create(d))
            continue
        seen.add(id(record))
        data = record.data_bearing or policies.is_data_bearing(d.type)
        if d.deployment in unchanged:
            changes.resources.append(_same(d, record, data))
        else:
            changes.resources.append(
                resource_change(d.type, d.name, record.id, d.deployment, data, record.properties, d.body)
            )
    changes.resources.extend(_delete(r) for r in state.resources if id(r) not in seen)
    return changes


def _unchanged_deployments(plan: DeploymentPlan, state: StateDocument) -> set[str]:
    """Deployments whose template and parameters hash as last applied: nothing in them can have changed."""
    out = set()
    for deployment in plan.deployments:
        record = state.deployments.get(deployment.name)
        if (
            record
            and record.status is DeploymentStatus.SUCCEEDED
            and record.template_hash == deployment.template_hash()
        ):
            out.add(deployment.name)
    return out


def _create(d: DesiredResource) -> ResourceChange:
    return ResourceChange(
        id=d.id,
        type=d.type,
        name=d.name,
        deployment=d.deployment,
        action=Action.CREATE,
        data_bearing=policies.is_data_bearing(d.type),
        verdict=policies.create_verdict(),
    )


def _same(d: DesiredResource, record: ResourceRecord, data_bearing: bool) -> ResourceChange:
    return ResourceChange(
        id=record.id,
        type=d.type,
        name=d.name,
        deployment=d.deployment,
        action=Action.NO_CHANGE,
        data_bearing=data_bearing,
    )


def _delete(record: ResourceRecord) -> ResourceChange:
    data = record.data_bearing or policies.is_data_bearing(record.type)
    return ResourceChange(
        id=record.id,
        type=record.type,
        name=record.name,
        deployment=record.deployment,
        action=Action.DELETE,
        data_bearing=data,
        verdict=policies.delete_verdict(record.type, data),
    )
