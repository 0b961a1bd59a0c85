"""Nested deployments: what a run made through the deployments its template nests (the flow log into
NetworkWatcherRG, the audit settings and saved searches, role assignments at another group or the subscription).

A nested deployment is a deployment of its own at its own scope. The outer run's operations name it only as one
target of type Microsoft.Resources/deployments (Deployment Operations - List, each operation's `targetResource`:
learn.microsoft.com/rest/api/resources/deploymentoperations/list); what it holds is listed by its own operations.
A succeeded outer run's outputResources include what nested runs made ("AFAIK `outputResources` today captures
resources from nested deployments as well", the ARM team in github.com/Azure/bicep-reps pull 3), but a run that
failed or was cancelled has no outputResources, so after a failed deploy or a destroy that cancelled the run, the
nested runs' own operations are the only record of what they made. They are read here, recursively, each at its
scope (resource group, or subscription where the ID names no group).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hpclz.azure.arm import Arm
from hpclz.azure.errors import describe, sdk_error
from hpclz.render.model import Deployment, Scope

NESTED_TYPE = "microsoft.resources/deployments"
MAX_DEPTH = 8  # hpclz nests one level; a bound keeps a malformed answer from looping
CANCELABLE = frozenset({"Accepted", "Running"})  # the only states Deployments - Cancel accepts


@dataclass(frozen=True)
class NestedRun:
    deployment: Deployment
    remote: dict[str, Any]
    operations: list[dict[str, Any]]


def nested_targets(operations: list[dict[str, Any]]) -> list[str]:
    """IDs of the nested deployments a run's operations name, each once, in ARM's order."""
    found: dict[str, str] = {}
    for op in operations:
        target = (op.get("properties") or {}).get("targetResource") or {}
        rid = target.get("id")
        kind = str(target.get("resourceType") or "").lower()
        if rid and (kind == NESTED_TYPE or f"/providers/{NESTED_TYPE}/" in str(rid).lower()):
            found.setdefault(str(rid).lower(), str(rid))
    return list(found.values())


def handle(parent: Deployment, resource_id: str) -> Deployment | None:
    """The nested run as a deployment ARM can be asked about, from its ID: /subscriptions/{s}[/resourceGroups/{g}]/
    providers/Microsoft.Resources/deployments/{name}. None for a scope hpclz never deploys to (management group,
    tenant)."""
    parts = resource_id.strip("/").split("/")
    if len(parts) < 6 or parts[0].lower() != "subscriptions":
        return None
    group = parts[3] if parts[2].lower() == "resourcegroups" else None
    return Deployment(
        name=parts[-1],
        component=parent.component,
        scope=Scope.RESOURCE_GROUP if group else Scope.SUBSCRIPTION,
        resource_group=group,
        location=parent.location,
        template={},
    )


def output_ids(remote: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in (remote.get("properties") or {}).get("outputResources") or [] if isinstance(o, dict)]


def merged(remote: dict[str, Any], runs: list[NestedRun]) -> dict[str, Any]:
    """The outer run's body with its nested runs' outputResources added, for the records it becomes."""
    extra = [o for run in runs for o in output_ids(run.remote)]
    if not extra:
        return remote
    props = dict(remote.get("properties") or {})
    props["outputResources"] = output_ids(remote) + extra
    return {**remote, "properties": props}


def is_nested_operation(op: dict[str, Any]) -> bool:
    target = (op.get("properties") or {}).get("targetResource") or {}
    return str(target.get("resourceType") or "").lower() == NESTED_TYPE


def collect(
    parent: Deployment,
    operations: list[dict[str, Any]],
    wait: Callable[[Deployment], tuple[dict[str, Any], list[dict[str, Any]]]],
    depth: int = 0,
) -> list[NestedRun]:
    """Every run nested under `parent` (whose operations are given), followed to its end by `wait`, depth first."""
    runs: list[NestedRun] = []
    if depth >= MAX_DEPTH:
        return runs
    for rid in nested_targets(operations):
        inner = handle(parent, rid)
        if inner is None:
            continue
        remote, ops = wait(inner)
        runs.append(NestedRun(inner, remote, ops))
        runs.extend(collect(inner, ops, wait, depth + 1))
    return runs


def cancel_nested(arm: Arm, parent: Deployment, on_cancel: Callable[[Deployment, str], None], depth: int = 0) -> None:
    """Cancel the nested runs still going under `parent`: cancelling the outer run does not promise to stop them
    (Deployments - Cancel says nothing of nested runs), and one left going would create while destroy deletes."""
    if depth >= MAX_DEPTH:
        return
    for rid in nested_targets(arm.operations(parent)):
        inner = handle(parent, rid)
        remote = arm.get_deployment(inner) if inner is not None else None
        if inner is None or remote is None:
            continue
        state = str((remote.get("properties") or {}).get("provisioningState"))
        if state in CANCELABLE:
            try:
                arm.cancel(inner)
                on_cancel(inner, f"nested run {inner.name} (it was {state} in ARM) before destroying")
            except sdk_error() as exc:  # it ended between the read and the cancel: the follow reads how
                on_cancel(inner, f"could not cancel nested run {inner.name} ({describe(exc).one_line()})")
        cancel_nested(arm, inner, on_cancel, depth + 1)
