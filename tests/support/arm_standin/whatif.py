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
    if isinstance(before, list) and isinstance(after, list) and before != after:
        return [{"path": path, "propertyChangeType": "Array", "children": _items(before, after)}]
    if before != after:
        return [{"path": path, "propertyChangeType": "Modify", "before": before, "after": after}]
    return []


def _items(before: list[Any], after: list[Any]) -> list[dict[str, Any]]:
    """An array's changes item by item, each child's `path` its index, as ARM's what-if returns them: a plain
    value replaced is a Delete at its old index and a Create at its new one (the documented VNet example,
    learn.microsoft.com/azure/azure-resource-manager/templates/deploy-what-if: `- 0: "10.0.0.0/16"`,
    `+ 0: "10.0.0.0/15"`); an object changed in place is a Modify whose children are its own property
    changes, relative to it (azure-cli's formatter test test_nested_array_changes); tests/fixtures/arm/
    whatif_array_items.json holds both."""
    if all(not isinstance(v, dict | list) for v in [*before, *after]):
        gone = [
            {"path": str(i), "propertyChangeType": "Delete", "before": v}
            for i, v in enumerate(before)
            if v not in after
        ]
        new = [
            {"path": str(i), "propertyChangeType": "Create", "after": v} for i, v in enumerate(after) if v not in before
        ]
        return gone + new
    out: list[dict[str, Any]] = []
    for i in range(max(len(before), len(after))):
        if i >= len(after):
            out.append({"path": str(i), "propertyChangeType": "Delete", "before": before[i]})
        elif i >= len(before):
            out.append({"path": str(i), "propertyChangeType": "Create", "after": after[i]})
        elif before[i] != after[i]:
            out.append({"path": str(i), "propertyChangeType": "Modify", "children": _delta(before[i], after[i])})
    return out


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
