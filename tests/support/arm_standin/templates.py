"""Expand a template into the concrete resources it declares (copy loops, conditions, child resources, nested
deployments)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.arm_standin.expressions import Scope, evaluate


@dataclass
class PlannedResource:
    id: str
    type: str
    name: str
    api_version: str
    location: str | None
    body: dict[str, Any]
    resource_group: str | None
    nested: list[PlannedResource] = field(default_factory=list)
    # The body evaluated again when provisioned: ARM evaluates reference() at run time, after what it
    # names exists (a role assignment to an identity the same deployment creates). None: no reference().
    late_body: Callable[[], dict[str, Any]] | None = None


def resource_id(scope: Scope, rtype: str, name: str, explicit_scope: str | None = None) -> str:
    namespace, *types = rtype.split("/")
    names = name.split("/")
    path = "/".join(f"{t}/{n}" for t, n in zip(types, names, strict=False))
    if explicit_scope:
        if not explicit_scope.startswith("/"):
            # A relative scope names a resource in the deployment's group, types and names interleaved as in a
            # resource ID: "Microsoft.KeyVault/vaults/kv1", "Microsoft.Storage/storageAccounts/sa/blobServices/
            # default/containers/c" (learn.microsoft.com/azure/azure-resource-manager/templates/scope-extension-resources).
            group = f"/subscriptions/{scope.subscription_id}/resourceGroups/{scope.resource_group}"
            explicit_scope = f"{group}/providers/{explicit_scope}"
        return f"{explicit_scope.rstrip('/')}/providers/{namespace}/{path}"
    if rtype.lower() == "microsoft.resources/resourcegroups":
        return f"/subscriptions/{scope.subscription_id}/resourceGroups/{name}"
    if scope.resource_group is None:
        return f"/subscriptions/{scope.subscription_id}/providers/{namespace}/{path}"
    return f"/subscriptions/{scope.subscription_id}/resourceGroups/{scope.resource_group}/providers/{namespace}/{path}"


def bind_parameters(template: dict[str, Any], given: dict[str, Any], scope: Scope) -> dict[str, Any]:
    """Template parameters with defaults, as ARM binds them; a missing one is an InvalidTemplate error."""
    values: dict[str, Any] = {}
    for name, spec in (template.get("parameters") or {}).items():
        if name in given:
            entry = given[name]
            values[name] = entry.get("value") if isinstance(entry, dict) and "value" in entry else entry
        elif "defaultValue" in spec:
            scope.parameters = values
            values[name] = evaluate(spec["defaultValue"], scope)
        else:
            raise TemplateError("InvalidTemplate", f"The value for the template parameter '{name}' is not provided.")
    return values


class TemplateError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def expand(template: dict[str, Any], parameters: dict[str, Any], scope: Scope) -> list[PlannedResource]:
    scope.parameters = bind_parameters(template, parameters, scope)
    scope.variables = {}
    for name, value in (template.get("variables") or {}).items():
        scope.variables[name] = evaluate(value, scope)
    return _declared(template.get("resources") or [], scope)


class _Same:
    """Resources go to the group their expressions are evaluated in (the template's own)."""


SAME = _Same()


def _declared(
    declared: Any, scope: Scope, parent: tuple[str, str] | None = None, at: str | _Same | None = SAME
) -> list[PlannedResource]:
    """`at`: the resource group the resources go to when it is not the one `scope` evaluates expressions in (an
    outer-scoped nested template deployed to another group; None: subscription scope)."""
    items = list(declared.values()) if isinstance(declared, dict) else list(declared)
    planned: list[PlannedResource] = []
    for item in items:
        copy = item.get("copy")
        count = int(evaluate(copy["count"], scope)) if copy else 1
        for index in range(count):
            scope.copy_index[""] = index
            if copy:
                scope.copy_index[copy.get("name", "")] = index
            if "condition" in item and not evaluate(item["condition"], scope):
                continue
            planned.append(_one(item, scope, parent, at))
    return planned


def _one(
    item: dict[str, Any], scope: Scope, parent: tuple[str, str] | None = None, at: str | _Same | None = SAME
) -> PlannedResource:
    placed = scope if isinstance(at, _Same) else dataclasses.replace(scope, resource_group=at)
    rtype = str(evaluate(item["type"], scope))
    name = str(evaluate(item["name"], scope))
    if parent and "/" not in rtype:  # a child declared inside its parent: type and name are relative to it
        rtype, name = f"{parent[0]}/{rtype}", f"{parent[1]}/{name}"
    skipped = ("copy", "condition", "dependsOn", "resources")
    if rtype.lower() == "microsoft.resources/deployments":
        # A nested template's own expressions belong to its scope, not to the outer template's.
        body = {k: evaluate(v, scope) for k, v in item.items() if k not in (*skipped, "properties")}
        body["properties"] = item.get("properties", {})
    else:
        body = {k: evaluate(v, scope) for k, v in item.items() if k not in skipped}
    explicit_scope = body.get("scope") if isinstance(body.get("scope"), str) else None
    target_group = placed.resource_group
    if rtype.lower() == "microsoft.resources/deployments":
        if item.get("resourceGroup"):
            target_group = str(evaluate(item["resourceGroup"], scope))
        elif item.get("subscriptionId"):
            # A subscription ID and no group: the nested deployment runs at subscription scope ("Scope to
            # subscription": "add a nested deployment and include the `subscriptionId` property",
            # learn.microsoft.com/azure/azure-resource-manager/templates/deploy-to-resource-group).
            target_group = None
        props = item.get("properties", {})
        inner_template = props.get("template") or {}
        evaluation = str((props.get("expressionEvaluationOptions") or {}).get("scope", "outer")).lower()
        if evaluation == "inner":
            inner_scope = Scope(
                subscription_id=scope.subscription_id,
                resource_group=target_group,
                location=scope.location,
                deployment_name=name,
                lookup=scope.lookup,
            )
            inner_params = evaluate(props.get("parameters") or {}, scope)
            nested = expand(inner_template, inner_params, inner_scope)
        else:
            # Outer, ARM's default: the nested template's expressions are the parent's, evaluated in the parent
            # template's scope (its parameters, variables, resourceGroup() and resourceId()'s default group), while its
            # resources still go to the nested deployment's group ("Expression evaluation scope in nested templates",
            # learn.microsoft.com/azure/azure-resource-manager/templates/linked-templates: "The default value is outer").
            nested = _declared(inner_template.get("resources") or [], scope, None, target_group)
        group_scope = Scope(scope.subscription_id, target_group, scope.location, name)
        rid = resource_id(group_scope, rtype, name)
        return PlannedResource(rid, rtype, name, str(item.get("apiVersion", "")), None, body, target_group, nested)
    rid = resource_id(placed, rtype, name, explicit_scope)
    location = body.get("location")
    # Like ARM, child resources are deployed (and listed as operations) after their parent.
    children = _declared(item.get("resources") or [], scope, (rtype, name), at)
    return PlannedResource(
        rid,
        rtype,
        name,
        str(evaluate(item.get("apiVersion", ""), scope)),
        location,
        body,
        target_group,
        children,
        _late_body(item, scope, skipped),
    )


def _late_body(item: dict[str, Any], scope: Scope, skipped: tuple[str, ...]) -> Callable[[], dict[str, Any]] | None:
    if "reference(" not in json.dumps(item).lower():
        return None
    frozen = dataclasses.replace(scope, copy_index=dict(scope.copy_index))
    return lambda: {k: evaluate(v, frozen) for k, v in item.items() if k not in skipped}
