"""Role assignments by what they mean: (scope, principal, role definition), not by name or position.

Templates name an assignment `[guid(scope, principal, role)]`, which cannot be evaluated offline, and
Azure names it by the GUID it computed, so neither name says which assignment is which. The meaning
can be read on both sides: the scope from the ID, and `principalId` / `roleDefinitionId` from the
rendered body, the recorded body, or what ARM returns. Our templates write both as a literal GUID or a
`resourceId()` / `subscriptionResourceId()` call with literal arguments; a managed identity's principal
is `reference(resourceId(...)).principalId`, known to ARM only, so it is identified by the identity's ID.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hpclz.plan.resources import ROLE_ASSIGNMENT, id_key

_GUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_ID_CALL = re.compile(r"\b(subscriptionResourceId|resourceId)\(\s*('[^']*'(?:\s*,\s*'[^']*')*)\s*\)", re.I)
_REFERENCE = re.compile(r"^\[\s*reference\(", re.I)
_ASSIGNMENTS = re.compile(r"/providers/Microsoft\.Authorization/roleAssignments/", re.I)

L = TypeVar("L")
R = TypeVar("R")


def is_role_assignment(rtype: str) -> bool:
    return rtype.lower() == ROLE_ASSIGNMENT


@dataclass(frozen=True)
class AssignmentKey:
    """Each part is `kind:value` (guid, identity, expr) or None where the body does not say."""

    scope: str
    principal: str | None
    role: str | None

    def same(self, other: AssignmentKey) -> bool:
        """Certainly the same assignment: every part known on both sides and equal."""
        return self == other and self.principal is not None and self.role is not None

    def compatible(self, other: AssignmentKey) -> bool:
        """Could be the same assignment: no part is known on both sides, in the same form, and different."""
        return (
            self.scope == other.scope
            and _may_equal(self.principal, other.principal)
            and _may_equal(self.role, other.role)
        )


def _may_equal(a: str | None, b: str | None) -> bool:
    if a is None or b is None or a == b:
        return True
    return a.split(":", 1)[0] != b.split(":", 1)[0]  # a GUID and an identity's ID: only ARM can tell


def assignment_key(rid: str, body: dict[str, Any] | None) -> AssignmentKey:
    """The key of a role assignment from its ID and a body: whole (`{"properties": {...}}`) or properties only."""
    props = (body or {}).get("properties", body) if isinstance(body, dict) else None
    if not isinstance(props, dict):
        props = {}
    return AssignmentKey(
        scope_of(rid), principal_key(props.get("principalId")), role_key(props.get("roleDefinitionId"))
    )


def key_of(rtype: str, rid: str, body: dict[str, Any] | None) -> AssignmentKey | None:
    """`assignment_key` for a role assignment; None for any other type."""
    return assignment_key(rid, body) if is_role_assignment(rtype) else None


def surely_same(a: AssignmentKey | None, b: AssignmentKey | None) -> bool:
    return a is not None and b is not None and a.same(b)


def maybe_same(a: AssignmentKey | None, b: AssignmentKey | None) -> bool:
    return a is not None and b is not None and a.compatible(b)


def scope_of(rid: str) -> str:
    """The assignment's scope (resource group, resource or subscription) as `id_key` spells IDs."""
    return id_key(_ASSIGNMENTS.split(rid, maxsplit=1)[0].rstrip("/"))


def principal_key(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    if _GUID.match(value):
        return f"guid:{value.lower()}"
    if _REFERENCE.match(value):
        target = static_id(value)
        if target:
            return f"identity:{target}"
    return f"expr:{_normalized(value)}"


def role_key(value: Any) -> str | None:
    """The role definition's GUID, from a full ID, a bare GUID or a `subscriptionResourceId(...)` expression."""
    if not isinstance(value, str) or not value:
        return None
    resolved = value if not value.startswith("[") else static_id(value)
    last = (resolved or "").rstrip("/").rsplit("/", 1)[-1]
    if _GUID.match(last):
        return f"guid:{last.lower()}"
    return f"expr:{_normalized(value)}"


def static_id(expression: str) -> str | None:
    """The ID a `resourceId(...)` or `subscriptionResourceId(...)` call with literal arguments names, in
    `id_key` form (no subscription, lower case); None when the expression holds no such call."""
    call = _ID_CALL.search(expression)
    if call is None:
        return None
    args = re.findall(r"'([^']*)'", call.group(2))
    typed = next((i for i, a in enumerate(args) if "/" in a), None)
    if typed is None:
        return None
    prefix, (namespace, *types), names = args[:typed], args[typed].split("/"), args[typed + 1 :]
    group = prefix[-1] if call.group(1).lower() == "resourceid" and prefix else None
    tail = "/".join(f"{t}/{n}" for t, n in zip(types, names, strict=False))
    return ((f"/resourcegroups/{group}" if group else "") + f"/providers/{namespace}/{tail}").lower()


def _normalized(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def pair_in_passes(
    lefts: Sequence[L], rights: Sequence[R], tests: Sequence[Callable[[L, R], bool]]
) -> list[tuple[L, R]]:
    """Pairs each left with at most one right. Stricter tests run first over every left, so a weaker
    test (compatible, or same slot in order) only sees what no stricter one could pair."""
    free_left = list(range(len(lefts)))
    free_right = list(range(len(rights)))
    out: list[tuple[L, R]] = []
    for test in tests:
        for i in list(free_left):
            j = next((j for j in free_right if test(lefts[i], rights[j])), None)
            if j is not None:
                free_left.remove(i)
                free_right.remove(j)
                out.append((lefts[i], rights[j]))
    return out
