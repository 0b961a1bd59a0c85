"""Azure RBAC for the ARM stand-in: who may do what, where.

Semantics (learn.microsoft.com/azure/role-based-access-control/role-definitions, "Actions", "NotActions",
"DataActions", "Wildcard permissions"; /overview "How Azure RBAC determines if a user has access to a resource"):
- an operation string is `{Company}.{ProviderName}/{resourceType}/{action}`, compared case-insensitively, and `*` in
  a role's pattern matches any run of characters, slashes included (`*/read` is every read);
- a permission block grants an action when one of its `actions` matches and none of its `notActions` does (NotActions
  subtract from that block only: they are not deny rules); data operations use `dataActions` / `notDataActions`, and a
  control-plane `*` never grants a data action;
- an assignment at a scope applies to that scope and everything beneath it (subscription > group > resource), and
  Azure RBAC is additive: access is the union of every applicable assignment of the principal and of its groups;
- no matching assignment: refused (403). The refusal's code and message are ARM's, as captured in public reports:
  `AuthorizationFailed`, "The client '<oid>' with object id '<oid>' does not have authorization to perform action
  '<action>' over scope '<scope>' or the scope is invalid. If access was recently granted, please refresh your
  credentials." (github.com/microsoft/azure-container-apps/issues/215, github.com/microsoft/foundry-dev-tools/issues/474).

Role definitions are the real built-in ones (data/builtin_roles.json, with their sources).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROLES_FILE = Path(__file__).parent / "data" / "builtin_roles.json"
ROLE_ASSIGNMENTS = "microsoft.authorization/roleassignments"


@dataclass(frozen=True)
class Principal:
    """A caller: its object ID, the Entra ID groups it belongs to (assignments to a group reach its members), and
    what kind of principal it is (User, ServicePrincipal: a managed identity is one)."""

    object_id: str
    groups: frozenset[str] = frozenset()
    kind: str = "User"
    name: str = ""

    def ids(self) -> set[str]:
        return {self.object_id.lower(), *(g.lower() for g in self.groups)}


@dataclass(frozen=True)
class Grant:
    """One role assignment, as the stand-in knows it: seeded by a test, or made by a deployment."""

    principal_id: str
    role_id: str  # the role definition's GUID
    scope: str


class UnknownRole(KeyError):
    """An assignment the decision depends on names a role whose definition the stand-in does not hold: it cannot
    judge the request, and says so instead of refusing (or granting) in Azure's name."""


@dataclass
class Refusal:
    status: int
    code: str
    message: str


@cache
def builtin_roles() -> dict[str, dict[str, Any]]:
    """Role definition GUID (lower case) -> the role's JSON."""
    doc = json.loads(ROLES_FILE.read_text())
    return {role["name"].lower(): role for role in doc["roles"]}


def role_id(name: str) -> str:
    """The GUID of a built-in role by its name (the role must be in data/builtin_roles.json)."""
    for rid, role in builtin_roles().items():
        if role["roleName"] == name:
            return rid
    raise KeyError(name)


@cache
def _pattern(pattern: str) -> re.Pattern[str]:
    """`*` matches any run of characters; a whole `/*/` segment may also match nothing. Managed Identity Operator's
    description is "Read and Assign User Assigned Identity" through `userAssignedIdentities/*/read` and
    `userAssignedIdentities/*/assign/action`, while the operations it is the role for are
    `Microsoft.ManagedIdentity/userAssignedIdentities/read` and `.../assign/action` (resource-provider-operations,
    Microsoft.ManagedIdentity): the segment wildcard there stands for no segment too."""
    segments = pattern.split("/*/")
    body = "/(?:.*/)?".join(".*".join(re.escape(part) for part in segment.split("*")) for segment in segments)
    return re.compile("^" + body + "$", re.I)


def matches(pattern: str, operation: str) -> bool:
    return bool(_pattern(pattern).match(operation))


def role_grants(role: dict[str, Any], operation: str, data: bool = False) -> bool:
    allow, deny = ("dataActions", "notDataActions") if data else ("actions", "notActions")
    return any(
        any(matches(p, operation) for p in block.get(allow, []))
        and not any(matches(p, operation) for p in block.get(deny, []))
        for block in role.get("permissions", [])
    )


def within(scope: str, target: str) -> bool:
    """Whether an assignment at `scope` applies at `target` (the same scope or one beneath it)."""
    s, t = scope.rstrip("/").lower(), target.rstrip("/").lower()
    return t == s or t.startswith(s + "/")


@dataclass
class Authorization:
    """The world's role assignments (seeded ones plus those deployments made) and the decision on each request."""

    seeded: list[Grant] = field(default_factory=list)

    def grant(self, principal_id: str, role: str, scope: str) -> None:
        """Seed an assignment of a built-in role (by name) to a principal, as if made outside the stand-in."""
        self.seeded.append(Grant(principal_id, role_id(role), scope))

    def grants(self, resources: dict[str, dict[str, Any]]) -> list[Grant]:
        made = [
            Grant(
                str(props.get("principalId", "")),
                str(props.get("roleDefinitionId", "")).rstrip("/").rsplit("/", 1)[-1],
                str(props.get("scope") or r["id"].lower().split("/providers/microsoft.authorization/")[0]),
            )
            for r in resources.values()
            if str(r.get("type", "")).lower() == ROLE_ASSIGNMENTS
            for props in [r.get("properties") or {}]
        ]
        return [*self.seeded, *made]

    def allowed(
        self, principal: Principal, operation: str, scope: str, resources: dict[str, dict[str, Any]], data: bool = False
    ) -> bool:
        roles = builtin_roles()
        ids = principal.ids()
        unknown: list[str] = []
        for g in self.grants(resources):
            if g.principal_id.lower() not in ids or not within(g.scope, scope):
                continue
            role = roles.get(g.role_id.lower())
            if role is None:
                unknown.append(g.role_id)
            elif role_grants(role, operation, data):
                return True
        if unknown:
            raise UnknownRole(
                f"role definition(s) {sorted(set(unknown))} not in {ROLES_FILE.name}: cannot judge {operation} at {scope}"
            )
        return False

    def check(
        self, principal: Principal, operation: str, scope: str, resources: dict[str, dict[str, Any]], data: bool = False
    ) -> Refusal | None:
        if self.allowed(principal, operation, scope, resources, data):
            return None
        if data:
            # Blob data plane: 403 AuthorizationPermissionMismatch, "This request is not authorized to perform this
            # operation using this permission." (learn.microsoft.com/rest/api/storageservices/blob-service-error-codes).
            return Refusal(
                403,
                "AuthorizationPermissionMismatch",
                "This request is not authorized to perform this operation using this permission.",
            )
        oid = principal.object_id
        return Refusal(
            403,
            "AuthorizationFailed",
            f"The client '{oid}' with object id '{oid}' does not have authorization to perform action '{operation}' "
            f"over scope '{scope}' or the scope is invalid. If access was recently granted, please refresh your "
            "credentials.",
        )


# ----- requests -> operations -----
def operation(method: str, path: str) -> tuple[str, str]:
    """The RBAC operation an ARM request needs and the scope it is checked at: `{namespace}/{types}/{verb}` where
    verb is read (GET, HEAD), write (PUT, PATCH), delete (DELETE) or `<name>/action` (POST to an action), as the
    resource provider operations list names them (learn.microsoft.com/azure/role-based-access-control/
    resource-provider-operations)."""
    parts = [p for p in path.strip("/").split("/") if p]
    lower = [p.lower() for p in parts]
    if "providers" not in lower:
        return _resources_operation(method, parts)
    at = len(lower) - 1 - lower[::-1].index("providers")
    namespace, rest = parts[at + 1] if at + 1 < len(parts) else "", parts[at + 2 :]
    if not rest:
        # /subscriptions/{s}/providers/{ns}[/register]: the provider registration itself.
        return f"Microsoft.Resources/subscriptions/providers/{_verb(method)}", "/" + "/".join(parts[:2])
    types = rest[0::2]
    action = None
    if method == "POST" and len(rest) % 2 == 1:
        action = types.pop()
    scope_parts = parts if len(rest) % 2 == 0 else parts[:-1]
    op = "/".join([namespace, *types])
    verb = f"{action}/action" if action else _verb(method)
    return f"{op}/{verb}", "/" + "/".join(scope_parts)


def _resources_operation(method: str, parts: list[str]) -> tuple[str, str]:
    """Paths outside any provider: resource groups, their resource lists and deployments' operations."""
    lower = [p.lower() for p in parts]
    scope = "/" + "/".join(parts[:4] if "resourcegroups" in lower else parts[:2])
    if lower[2:3] == ["resourcegroups"] and len(parts) == 4:
        return f"Microsoft.Resources/subscriptions/resourceGroups/{_verb(method)}", scope
    if "deployments" in lower:
        return "Microsoft.Resources/deployments/operations/read", scope
    if lower[-1:] == ["resources"]:
        return "Microsoft.Resources/subscriptions/resourceGroups/resources/read", scope
    return f"Microsoft.Resources/subscriptions/{lower[2] if len(lower) > 2 else 'subscriptions'}/read", scope


def _verb(method: str) -> str:
    return {"GET": "read", "HEAD": "read", "PUT": "write", "PATCH": "write", "DELETE": "delete"}.get(method, "action")


def write_operation(resource_type: str) -> str:
    """What creating or updating a resource of this type needs (a deployment checks it for each resource)."""
    if resource_type.lower() == "microsoft.resources/resourcegroups":
        return "Microsoft.Resources/subscriptions/resourceGroups/write"
    return f"{resource_type}/write"
