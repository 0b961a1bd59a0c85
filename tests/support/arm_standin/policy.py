"""Azure Policy for the ARM stand-in: the assignments in its world judge every resource write in their scope.

Definitions are the real built-in ones hpclz assigns (data/policy_definitions/, with their sources). The language
implemented is the part those definitions use, as the definition structure documents it
(learn.microsoft.com/azure/governance/policy/concepts/definition-structure-policy-rule):
- logical operators `allOf`, `anyOf`, `not`;
- conditions `equals`, `notEquals`, `in`, `notIn`, `contains`, `notContains`, `like`, `notLike`, `exists`; string
  comparisons are case-insensitive ("When comparing strings, the evaluation is case-insensitive" for equals/in and
  their negations; contains and like likewise);
- fields `name`, `type`, `location`, `id`, `tags`, `tags[<name>]`, `tags.<name>` and the property aliases listed in
  ALIASES; a field a resource lacks is absent: `exists: false` holds for it and every comparison but the negated
  ones is false;
- `[parameters('x')]` and `concat(...)` in field names and values, parameters from the assignment over the
  definition's defaults;
- effects deny (the write is refused: RequestDisallowedByPolicy), audit (recorded, the write goes on) and disabled;
  an assignment with enforcementMode DoNotEnforce never denies (definition-structure-basics, "Enforcement mode");
- mode Indexed evaluates only resource types that support tags and location, mode All every type
  (definition-structure-basics, "Resource Manager modes"). Tracked resources carry a location, so a write with no
  location is a type Indexed skips; so is an extension resource (an ID with a second `/providers/`): those hpclz
  writes (role, policy and maintenance configuration assignments, diagnostic settings) support no tags
  (learn.microsoft.com/azure/azure-resource-manager/management/tag-support).

Refusals use ARM's code and message: "Resource '<name>' was disallowed by policy. Policy identifiers:
'[{"policyAssignment":{"name":...,"id":...},"policyDefinition":{"name":...,"id":...}}]'."
(RequestDisallowedByPolicy, as reported in github.com/microsoft/vscode-apimanagement/issues/348).
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from tests.support.arm_standin.expressions import Scope, evaluate

DEFINITIONS = Path(__file__).parent / "data" / "policy_definitions"
POLICY_ASSIGNMENTS = "microsoft.authorization/policyassignments"

# Alias -> the property path of the resource body it reads. Each alias below is the one the definitions in
# data/policy_definitions name; Microsoft.Storage's aliases map to these properties of the storageAccounts REST body
# (azure-rest-api-specs, Microsoft.Storage StorageAccountPropertiesCreateParameters: publicNetworkAccess,
# allowBlobPublicAccess).
ALIASES = {
    "microsoft.storage/storageaccounts/publicnetworkaccess": ("properties", "publicNetworkAccess"),
    "microsoft.storage/storageaccounts/allowblobpublicaccess": ("properties", "allowBlobPublicAccess"),
}
_ABSENT = object()


class PolicyLanguageError(ValueError):
    """The definition uses a part of the policy language the stand-in does not implement: fail, never guess."""


@cache
def definitions() -> dict[str, dict[str, Any]]:
    """Definition GUID (lower case) -> the built-in definition's JSON."""
    out = {}
    for path in sorted(DEFINITIONS.glob("*.json")):
        doc = json.loads(path.read_text())
        out[doc["name"].lower()] = doc
    return out


@dataclass
class Verdict:
    assignment: str  # the assignment's ID
    definition: str  # the definition's ID
    effect: str  # deny | audit


@dataclass
class Refusal:
    status: int
    code: str
    message: str


@dataclass
class PolicyLog:
    """What policy decided in the stand-in's world: each audit and each deny, in order."""

    audits: list[tuple[str, Verdict]] = field(default_factory=list)
    denials: list[tuple[str, Verdict]] = field(default_factory=list)


def assignments_over(resource_id: str, resources: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The policy assignments whose scope holds the resource (an assignment's scope is the ID it is an extension of)."""
    rid = resource_id.lower()
    out = []
    for key, r in resources.items():
        if str(r.get("type", "")).lower() != POLICY_ASSIGNMENTS:
            continue
        scope = key.split("/providers/microsoft.authorization/policyassignments/")[0]
        if not (rid == scope or rid.startswith(scope + "/")):
            continue
        # notScopes: the resource containers and resources the assignment leaves out, children included
        # (learn.microsoft.com/azure/governance/policy/concepts/assignment-structure, "Excluded scopes").
        excluded = [str(x).rstrip("/").lower() for x in (r.get("properties") or {}).get("notScopes") or []]
        if any(rid == x or rid.startswith(x + "/") for x in excluded):
            continue
        out.append(r)
    return out


def judge(resource: dict[str, Any], resources: dict[str, dict[str, Any]], log: PolicyLog) -> Refusal | None:
    """Evaluate every assignment over `resource` (id, name, type, location, tags, properties) for a write."""
    denied: list[Verdict] = []
    for assignment in assignments_over(str(resource["id"]), resources):
        verdict = evaluate_assignment(assignment, resource)
        if verdict is None:
            continue
        if verdict.effect == "deny":
            denied.append(verdict)
        else:
            log.audits.append((str(resource["id"]), verdict))
    if not denied:
        return None
    for verdict in denied:
        log.denials.append((str(resource["id"]), verdict))
    identifiers = [
        {
            "policyAssignment": {"name": v.assignment.rsplit("/", 1)[-1], "id": v.assignment},
            "policyDefinition": {"name": v.definition.rsplit("/", 1)[-1], "id": v.definition},
        }
        for v in denied
    ]
    name = str(resource.get("name", "")).split("/")[-1]
    return Refusal(
        403,
        "RequestDisallowedByPolicy",
        f"Resource '{name}' was disallowed by policy. Policy identifiers: '{json.dumps(identifiers, separators=(',', ':'))}'.",
    )


def evaluate_assignment(assignment: dict[str, Any], resource: dict[str, Any]) -> Verdict | None:
    props = assignment.get("properties") or {}
    definition_id = str(props.get("policyDefinitionId", ""))
    definition = definitions().get(definition_id.rstrip("/").rsplit("/", 1)[-1].lower())
    if definition is None:
        raise PolicyLanguageError(f"no built-in definition {definition_id} in {DEFINITIONS}")
    body = definition["properties"]
    if body.get("mode", "All").lower() == "indexed" and not _indexed(resource):
        return None
    scope = Scope("", None, "", "", parameters=_parameters(body, props.get("parameters") or {}))
    rule = body["policyRule"]
    if not condition(rule["if"], resource, scope):
        return None
    effect = str(evaluate(rule["then"]["effect"], scope)).lower()
    if effect == "disabled":
        return None
    if effect == "deny" and str(props.get("enforcementMode", "Default")).lower() == "donotenforce":
        return None
    if effect not in ("deny", "audit"):
        raise PolicyLanguageError(f"effect {effect!r} is not implemented by the stand-in")
    return Verdict(str(assignment["id"]), definition_id, effect)


def _indexed(resource: dict[str, Any]) -> bool:
    return bool(resource.get("location")) and str(resource["id"]).lower().count("/providers/") == 1


def _parameters(body: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, spec in (body.get("parameters") or {}).items():
        if name in given:
            value = given[name]
            out[name] = value.get("value") if isinstance(value, dict) and "value" in value else value
        elif "defaultValue" in spec:
            out[name] = spec["defaultValue"]
    return out


LOGICAL = ("allOf", "anyOf", "not")
OPERATORS = ("equals", "notEquals", "in", "notIn", "contains", "notContains", "like", "notLike", "exists")


def condition(expr: dict[str, Any], resource: dict[str, Any], scope: Scope) -> bool:
    if "allOf" in expr:
        return all(condition(e, resource, scope) for e in expr["allOf"])
    if "anyOf" in expr:
        return any(condition(e, resource, scope) for e in expr["anyOf"])
    if "not" in expr:
        return not condition(expr["not"], resource, scope)
    if "field" not in expr:
        raise PolicyLanguageError(f"condition {expr} has no field (value/count are not implemented)")
    value = field_value(str(evaluate(expr["field"], scope)), resource)
    ops = [k for k in expr if k in OPERATORS]
    if len(ops) != 1:
        raise PolicyLanguageError(f"condition {expr}: expected one of {OPERATORS}")
    op = ops[0]
    return compare(op, value, evaluate(expr[op], scope))


def compare(op: str, value: Any, target: Any) -> bool:
    if op == "exists":
        return (value is not _ABSENT) == (str(target).lower() == "true")
    negated = op.startswith("not")
    base = op[3].lower() + op[4:] if negated else op
    if value is _ABSENT:
        return negated
    result = {
        "equals": lambda: _text(value) == _text(target),
        "in": lambda: _text(value) in [_text(t) for t in target],
        "contains": lambda: _text(target) in _text(value),
        "like": lambda: fnmatch.fnmatchcase(_text(value), _text(target)),
    }[base]()
    return not result if negated else result


def _text(value: Any) -> str:
    """Policy compares strings case-insensitively; booleans compare as their JSON text ("false")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).lower()


def field_value(name: str, resource: dict[str, Any]) -> Any:
    key = name.lower()
    if key in ("name", "type", "location", "id"):
        return resource.get(key, _ABSENT)
    tags = {str(k).lower(): v for k, v in (resource.get("tags") or {}).items()}
    if key == "tags":
        return resource.get("tags") or _ABSENT
    if key.startswith("tags[") and key.endswith("]"):
        return tags.get(key[5:-1].strip("'"), _ABSENT)
    if key.startswith("tags."):
        return tags.get(key[5:], _ABSENT)
    path = ALIASES.get(key)
    if path is None:
        raise PolicyLanguageError(f"alias {name!r} is not known to the stand-in (add it to ALIASES with its source)")
    value: Any = resource
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return _ABSENT
        value = value[part]
    return value
