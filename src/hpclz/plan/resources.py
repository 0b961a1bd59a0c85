"""The Azure resources a rendered DeploymentPlan declares, with IDs and bodies comparable to state.

Deploy should record `DesiredResource.body` as `ResourceRecord.properties` (and `.id`): then an
offline plan compares like with like. Whole-string `[parameters('x')]` and `[variables('x')]`
references are resolved, because render may pass config values as parameters and a change in
one must show up as a change of the property that uses it. Other ARM expressions stay as text:
they change only when the template changes, and then the text changes too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hpclz.render.model import Deployment, DeploymentPlan, Scope

STRUCTURAL_KEYS = frozenset(
    {"type", "name", "apiVersion", "dependsOn", "comments", "condition", "copy", "resources", "metadata", "scope"}
)
NESTED_DEPLOYMENT = "microsoft.resources/deployments"
_REFERENCE = re.compile(r"^\[(parameters|variables)\('([^']+)'\)\]$")
SUBSCRIPTION_PLACEHOLDER = "{subscription}"


@dataclass
class DesiredResource:
    id: str
    type: str
    name: str
    deployment: str
    api_version: str
    body: dict[str, Any]
    secure: frozenset[str] = frozenset()  # secureString/secureObject parameters in scope (hpclz.plan.attributes)


@dataclass
class _Context:
    deployment: str
    subscription: str
    resource_group: str | None
    parameters: dict[str, Any]
    variables: dict[str, Any]
    secure: frozenset[str] = frozenset()

    def scope_id(self, scope: str) -> str:
        """An extension resource's `scope`: a full ID, or (symbolic form) `Namespace/type/name` in this group."""
        if scope.startswith("/"):
            return scope
        group = f"/resourceGroups/{self.resource_group}" if self.resource_group else ""
        return f"/subscriptions/{self.subscription}{group}/providers/{scope}"

    def resolve(self, value: Any) -> Any:
        if isinstance(value, str):
            match = _REFERENCE.match(value)
            if not match:
                return value
            kind, key = match.groups()
            table = self.parameters if kind == "parameters" else self.variables
            return table.get(key, value)
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value


def _secure_names(template: dict[str, Any]) -> frozenset[str]:
    specs = template.get("parameters", {})
    return frozenset(
        name
        for name, spec in specs.items()
        if isinstance(spec, dict) and str(spec.get("type", "")).lower() in ("securestring", "secureobject")
    )


def _parameter_values(template: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Values given to the deployment win over the template's defaults; ARM's {"value": x} form is unwrapped."""
    values = {k: spec["defaultValue"] for k, spec in template.get("parameters", {}).items() if "defaultValue" in spec}
    for key, value in given.items():
        values[key] = value["value"] if isinstance(value, dict) and set(value) == {"value"} else value
    return values


def resource_id(subscription: str, resource_group: str | None, rtype: str, name: str) -> str:
    if rtype.lower() == "microsoft.resources/resourcegroups":
        return f"/subscriptions/{subscription}/resourceGroups/{name}"
    namespace, *types = rtype.split("/")
    names = [name] if name.startswith("[") else name.split("/")  # an expression's "/" is not a name separator
    tail = "/".join(f"{t}/{n}" for t, n in zip(types, names, strict=False))
    scope = f"/subscriptions/{subscription}" + (f"/resourceGroups/{resource_group}" if resource_group else "")
    return f"{scope}/providers/{namespace}/{tail}"


_RESOURCE_GROUP = re.compile(r"^/subscriptions/[^/]+/resourceGroups/([^/]+)$", re.I)
_PROVIDERS = re.compile(r"/providers/", re.I)


def parse_resource_id(rid: str) -> tuple[str, str]:
    """The type and name an ARM resource ID names (a child's name keeps its parents': `vnet/subnet`);
    extension resources take their last provider part."""
    match = _RESOURCE_GROUP.match(rid)
    if match:
        return "Microsoft.Resources/resourceGroups", match.group(1)
    parts = _PROVIDERS.split(rid)
    if len(parts) == 1:
        return "", rid.rsplit("/", 1)[-1]
    namespace, *rest = parts[-1].split("/")
    return "/".join([namespace, *rest[0::2]]), "/".join(rest[1::2])


def id_key(rid: str) -> str:
    """IDs compare case-insensitively and without the subscription, which offline plans may not know."""
    return re.sub(r"^/subscriptions/[^/]+", "", rid, flags=re.I).lower()


def parent_key(rid: str, name: str) -> str:
    """A resource's type and parent scope in `id_key` form: its ID less its name (which may hold a "/"). Where a
    name is an ARM expression (`[guid(...)]`), siblings at one such slot can be told apart only by order."""
    return id_key(rid[: len(rid) - len(name) - 1])


def desired_resources(plan: DeploymentPlan) -> list[DesiredResource]:
    out: list[DesiredResource] = []
    for deployment in plan.deployments:
        out.extend(deployment_resources(deployment, plan.subscription_id or SUBSCRIPTION_PLACEHOLDER))
    return out


def deployment_resources(deployment: Deployment, subscription: str) -> list[DesiredResource]:
    rg = deployment.resource_group if deployment.scope is Scope.RESOURCE_GROUP else None
    template = deployment.template
    params = _parameter_values(template, deployment.parameters)
    ctx = _Context(deployment.name, subscription, rg, params, {}, _secure_names(template))
    ctx.variables = ctx.resolve(template.get("variables", {}))
    out: list[DesiredResource] = []
    _collect(template.get("resources", []), ctx, "", "", out)
    return out


def _collect(resources: Any, ctx: _Context, parent_type: str, parent_name: str, out: list[DesiredResource]) -> None:
    items = resources.values() if isinstance(resources, dict) else resources  # languageVersion 2.0 symbolic names
    for raw in items:
        if not isinstance(raw, dict) or raw.get("condition") is False or raw.get("existing") is True:
            continue
        rtype = str(raw.get("type", ""))
        name = str(ctx.resolve(raw.get("name", "")))
        if parent_type:
            rtype, name = f"{parent_type}/{rtype}", f"{parent_name}/{name}"
        if rtype.lower() == NESTED_DEPLOYMENT and isinstance(raw.get("properties", {}).get("template"), dict):
            _collect_nested(raw, ctx, out)
            continue
        body = {k: ctx.resolve(v) for k, v in raw.items() if k not in STRUCTURAL_KEYS}
        rid = resource_id(ctx.subscription, ctx.resource_group, rtype, name)
        if "scope" in raw:
            rid = f"{ctx.scope_id(str(ctx.resolve(raw['scope'])))}/providers/{rtype}/{name}"
        api = str(raw.get("apiVersion", ""))
        out.append(DesiredResource(rid, rtype, name, ctx.deployment, api, body, ctx.secure))
        _collect(raw.get("resources", []), ctx, rtype, name, out)


def _collect_nested(raw: dict[str, Any], ctx: _Context, out: list[DesiredResource]) -> None:
    """An inline nested deployment (e.g. resource groups, then what goes in them) is flattened into its parent."""
    props = raw["properties"]
    template = props["template"]
    given = {k: ctx.resolve(v) for k, v in props.get("parameters", {}).items()}
    # A subscription ID and no group: the nested deployment runs at subscription scope, not in the parent's group
    # ("Scope to subscription", MicrosoftDocs/azure-docs articles/azure-resource-manager/templates/
    # deploy-to-resource-group.md: "add a nested deployment and include the `subscriptionId` property").
    default = None if "subscriptionId" in raw and "resourceGroup" not in raw else ctx.resource_group
    rg = ctx.resolve(raw.get("resourceGroup", default))
    values = _parameter_values(template, given)
    nested = _Context(ctx.deployment, ctx.subscription, rg, values, {}, ctx.secure | _secure_names(template))
    nested.variables = nested.resolve(template.get("variables", {}))
    _collect(template.get("resources", []), nested, "", "", out)


ROLE_ASSIGNMENT = "microsoft.authorization/roleassignments"
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_IDENTITY = re.compile(r"userAssignedIdentities'?\s*,\s*'([^']+)'|userAssignedIdentities/([^/'\]]+)")
# `[reference(resourceId('Microsoft.Dashboard/grafana', 'amg-x'), ..., 'full').identity.principalId]`: the
# system-assigned identity of the resource the expression names.
_RESOURCE_REF = re.compile(r"resourceId\((?:'[^']*'\s*,\s*)*?'([A-Za-z]+\.[A-Za-z]+/[A-Za-z/]+)'\s*,\s*'([^']+)'\)")


def resource_label(rtype: str, name: str, rid: str, body: dict[str, Any] | None) -> str:
    """What a person reads for a resource in `hpclz plan`; never used to match or diff (that is `id_key`).

    Role assignments are named `[guid(...)]` in templates and by a GUID in Azure, so they are labelled from
    their properties instead: `Reader -> group dde85349… at rg-energy-network-prod-scus`.
    """
    if rtype.lower() != ROLE_ASSIGNMENT:
        return _full_name(rtype, name, rid)
    if not isinstance(body, dict):
        return name
    props = body.get("properties", body)
    if not isinstance(props, dict) or "roleDefinitionId" not in props:
        return name
    return f"{_role_name(str(props['roleDefinitionId']))} -> {_principal(props)} at {_scope_name(rid)}"


def _full_name(rtype: str, name: str, rid: str) -> str:
    """A child resource by its full name (`pep-energy-blob-prod-scus/default`), not its last segment, which
    many children share; taken from the ID, whose name segments follow each type segment."""
    if rtype.count("/") < 2 or "[" in rid or "/providers/" not in rid:
        return name
    segments = rid.rsplit("/providers/", 1)[1].split("/")[1:]  # after the namespace: type, name, type, name...
    names = segments[1::2]
    return "/".join(names) if len(names) == rtype.count("/") else name


def _role_name(definition: str) -> str:
    from hpclz.render.roles import ROLE_IDS  # the table render assigns from; plan reads it back

    ids = _GUID.findall(definition)
    if not ids:
        return "role " + definition[:40]
    names = {role_id.lower(): role.value for role, role_id in ROLE_IDS.items()}
    return names.get(ids[-1].lower(), f"role {ids[-1][:8]}…")


def _principal(props: dict[str, Any]) -> str:
    principal = str(props.get("principalId", ""))
    kind = {"Group": "group", "User": "user", "ServicePrincipal": "identity"}.get(str(props.get("principalType")), "")
    identity = _IDENTITY.search(principal)
    if identity:
        return f"identity {identity.group(1) or identity.group(2)}"
    resource = _RESOURCE_REF.search(principal)
    if resource:
        return f"identity of {resource.group(1).rsplit('/', 1)[-1]} {resource.group(2)}"
    if principal.startswith("["):
        return f"{kind or 'principal'} the template computes"  # never the raw ARM expression
    shown = f"{principal[:8]}…" if _GUID.fullmatch(principal) else principal[:40]
    return f"{kind} {shown}".strip()


def _scope_name(rid: str) -> str:
    """The assignment's scope from its ID: a resource group, a resource (its name) or the subscription."""
    scope = re.split(r"/providers/Microsoft\.Authorization/roleAssignments/", rid, flags=re.I)[0].rstrip("/")
    parts = scope.split("/")
    if len(parts) >= 5 and parts[-2].lower() == "resourcegroups":
        return parts[-1]
    if "/providers/" in scope.lower():
        return parts[-1]
    return "subscription"


def scope_label(rid: str, rtype: str) -> str:
    """Where a resource sits, for telling apart resources of one type and name: the resource it extends
    (`kv-energy-prod`, `stenergy/default`), its resource group, or `subscription`."""
    marker = f"/providers/{rtype}/".lower()
    at = rid.lower().rfind(marker)
    scope = rid[:at] if at >= 0 else rid.rsplit("/", 2)[0]
    if "/providers/" in scope:
        segments = scope.rsplit("/providers/", 1)[1].split("/")[1:]
        return "/".join(segments[1::2]) or scope
    parts = scope.split("/")
    if len(parts) >= 5 and parts[-2].lower() == "resourcegroups":
        return parts[-1]
    return "subscription"
