"""What-if: compare what a template declares with what exists, shaped like the recorded responses."""

from __future__ import annotations

from typing import Any

from tests.support.arm_standin.templates import PlannedResource
from tests.support.arm_standin.world import World

COMPARED = ("location", "tags", "sku", "kind", "properties")


def _delta(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[dict[str, Any]] = []
        for key in sorted(set(before) | set(after)):
            sub = f"{path}.{key}" if path else key
            if key not in before:
                out.append({"path": sub, "propertyChangeType": "Create", "after": after[key]})
            elif key in after:
                out.extend(_delta(before[key], after[key], sub))
        return out
    if before != after:
        return [{"path": path, "propertyChangeType": "Modify", "before": before, "after": after}]
    return []


def _expanded(planned: list[PlannedResource]) -> list[PlannedResource]:
    """A nested deployment shows as the resources its template declares, as ARM's what-if reports it
    (learn.microsoft.com/azure/azure-resource-manager/templates/deploy-what-if: nested templates are evaluated)."""
    out: list[PlannedResource] = []
    for resource in planned:
        if resource.type.lower() == "microsoft.resources/deployments":
            out.extend(_expanded(resource.nested))
        else:
            out.append(resource)
    return out


def what_if_changes(world: World, planned: list[PlannedResource], group: str | None = None) -> list[dict[str, Any]]:
    """Create / Modify / NoChange per declared resource; in a group, what the template omits is Ignore
    (incremental mode leaves it alone)."""
    changes = []
    for resource in _expanded(planned):
        after = {"id": resource.id, "type": resource.type, "name": resource.name, "apiVersion": resource.api_version}
        after.update({k: resource.body[k] for k in COMPARED if k in resource.body})
        existing = world.lookup(resource.id)
        if existing is None:
            changes.append({"resourceId": resource.id, "changeType": "Create", "after": after})
            continue
        before = {k: existing[k] for k in ("id", "type", "name", "apiVersion", *COMPARED) if k in existing}
        before_props = dict(before.get("properties") or {})
        before_props.pop("provisioningState", None)
        before["properties"] = before_props
        delta = [
            d
            for d in _delta(
                {k: before.get(k) for k in COMPARED if k in after}, {k: after[k] for k in COMPARED if k in after}
            )
        ]
        change: dict[str, Any] = {
            "resourceId": resource.id,
            "changeType": "Modify" if delta else "NoChange",
            "before": before,
            "after": after,
        }
        if delta:
            change["delta"] = delta
        changes.append(change)
    declared = {r.id.lower() for r in _expanded(planned)}
    if group is not None:
        for existing in world.resources_in(group):
            if existing["id"].lower() not in declared and str(existing["type"]).count("/") == 1:
                changes.append({"resourceId": existing["id"], "changeType": "Ignore", "before": existing})
    return changes
