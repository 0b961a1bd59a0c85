"""Turn a finished ARM deployment into state records: resources with IDs, data flags, rendered bodies, outputs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hpclz.plan.assignments import AssignmentKey, assignment_key, is_role_assignment, pair_in_passes
from hpclz.plan.resources import (
    NESTED_DEPLOYMENT,
    SUBSCRIPTION_PLACEHOLDER,
    DesiredResource,
    deployment_resources,
    id_key,
)
from hpclz.render.plan import DATA_BEARING_TYPES, DATA_TAG, Deployment
from hpclz.state.model import ResourceRecord

HASH_TAG = "hpclz-template-hash"


def _declared(template: dict[str, Any]) -> list[dict[str, Any]]:
    """Every resource a template declares, nested deployments' inner templates included."""
    items = template.get("resources") or []
    found: list[dict[str, Any]] = []
    for item in items.values() if isinstance(items, dict) else items:
        if not isinstance(item, dict):
            continue
        found.append(item)
        inner = (item.get("properties") or {}).get("template")
        if isinstance(inner, dict):
            found.extend(_declared(inner))
    return found


def declared_types(template: dict[str, Any]) -> set[str]:
    return {str(r.get("type")) for r in _declared(template) if isinstance(r.get("type"), str)}


def _type_of(resource_id: str) -> tuple[str, str]:
    """(type, name) from a resource ID: providers/NS/t1/n1/t2/n2 -> NS/t1/t2, n2."""
    parts = resource_id.strip("/").split("/")
    lowered = [p.lower() for p in parts]
    if "providers" not in lowered:
        return "Microsoft.Resources/resourceGroups", parts[-1]
    i = len(lowered) - 1 - lowered[::-1].index("providers")
    namespace, rest = parts[i + 1], parts[i + 2 :]
    return "/".join([namespace, *rest[0::2]]), rest[-1]


def _applied_ids(remote: dict[str, Any], operations: list[dict[str, Any]]) -> list[str]:
    """What ARM says exists after this deployment, in its order, each once; nested deployments are not resources."""
    ids = [o["id"] for o in (remote.get("properties") or {}).get("outputResources") or [] if o.get("id")]
    for op in operations:
        target = (op.get("properties") or {}).get("targetResource") or {}
        if target.get("id") and (op.get("properties") or {}).get("provisioningState") == "Succeeded":
            ids.append(target["id"])
    unique: dict[str, str] = {}
    for rid in ids:
        unique.setdefault(rid.lower(), rid)
    return [rid for rid in unique.values() if _type_of(rid)[0].lower() != NESTED_DEPLOYMENT]


def _secure_names(template: dict[str, Any]) -> set[str]:
    return {
        name
        for name, spec in (template.get("parameters") or {}).items()
        if isinstance(spec, dict) and str(spec.get("type", "")).lower() in ("securestring", "secureobject")
    }


def _without_secure_values(template: dict[str, Any]) -> dict[str, Any]:
    """A copy whose secureString/secureObject parameters have no default and are given no value by a parent
    deployment: references to them stay `[parameters('x')]` text, so their values can never reach state."""
    secure = _secure_names(template)
    params = {
        name: {k: v for k, v in spec.items() if k != "defaultValue"} if name in secure else spec
        for name, spec in (template.get("parameters") or {}).items()
    }
    items = template.get("resources") or []
    resources: Any = (
        {key: _item_without_secure_values(item) for key, item in items.items()}
        if isinstance(items, dict)
        else [_item_without_secure_values(item) for item in items]
    )
    return {**template, "parameters": params, "resources": resources}


def _item_without_secure_values(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    props = item.get("properties")
    inner = props.get("template") if isinstance(props, dict) else None
    if not isinstance(props, dict) or not isinstance(inner, dict):
        return item
    secure = _secure_names(inner)
    given = {k: v for k, v in (props.get("parameters") or {}).items() if k not in secure}
    return {**item, "properties": {**props, "template": _without_secure_values(inner), "parameters": given}}


def _recordable(deployment: Deployment) -> Deployment:
    secure = _secure_names(deployment.template) | set(deployment.secure_parameters)
    return deployment.model_copy(
        update={
            "template": _without_secure_values(deployment.template),
            "parameters": {k: v for k, v in deployment.parameters.items() if k not in secure},
        }
    )


def _slot(rid: str, name: str) -> str:
    """Type and parent scope of a resource: where a name that is an ARM expression (`[guid(...)]`) can be
    told apart from its siblings only by order, unless it is a role assignment whose meaning is known."""
    return id_key(rid[: len(rid) - len(name) - 1])


def returned_properties(remote: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Properties ARM gave back for a resource ID (lower): an `outputResources` entry's `properties`, or an
    operation's response content (present only when the deployment asked for `debugSetting`). ARM and the
    stand-in usually give neither, only IDs: then role assignments pair by order (see `_pair`)."""
    found: dict[str, dict[str, Any]] = {}
    for item in (remote.get("properties") or {}).get("outputResources") or []:
        if isinstance(item, dict) and item.get("id") and isinstance(item.get("properties"), dict):
            found.setdefault(str(item["id"]).lower(), item["properties"])
    for op in operations:
        props = op.get("properties") or {}
        target = (props.get("targetResource") or {}).get("id")
        content = ((props.get("response") or {}).get("content") or {}).get("properties")
        if target and isinstance(content, dict):
            found.setdefault(str(target).lower(), content)
    return found


@dataclass
class _Applied:
    id: str
    type: str
    name: str
    returned: dict[str, Any]

    def key(self) -> AssignmentKey | None:
        return assignment_key(self.id, {"properties": self.returned}) if is_role_assignment(self.type) else None


def _assignment_key(d: DesiredResource) -> AssignmentKey | None:
    return assignment_key(d.id, d.body) if is_role_assignment(d.type) else None


def _same_assignment(applied: _Applied, d: DesiredResource) -> bool:
    mine, theirs = applied.key(), _assignment_key(d)
    return mine is not None and theirs is not None and mine.same(theirs)


def _maybe_same_assignment(applied: _Applied, d: DesiredResource) -> bool:
    """With no properties from ARM only the scope is known: the assignments at one scope pair in order."""
    mine, theirs = applied.key(), _assignment_key(d)
    return mine is not None and theirs is not None and mine.compatible(theirs)


def _same_slot(applied: _Applied, d: DesiredResource) -> bool:
    return (
        not is_role_assignment(d.type)
        and applied.type.lower() == d.type.lower()
        and _slot(applied.id, applied.name) == _slot(d.id, d.name)
    )


def _pair(
    ids: list[str], desired: list[DesiredResource], returned: dict[str, dict[str, Any]]
) -> dict[str, DesiredResource]:
    """ARM's resource ID (lower) -> the rendered resource it is. Literal names match by ID. A role assignment
    pairs by (scope, principal, role definition) where ARM returned its properties; ARM's outputResources
    carry only IDs, so otherwise the assignments at one scope pair in ARM's order, as do other
    expression-named siblings: right only while ARM lists them in template order (the stand-in does)."""
    by_key = {id_key(d.id): d for d in desired if not d.name.startswith("[")}
    paired: dict[str, DesiredResource] = {}
    rest: list[_Applied] = []
    for rid in ids:
        found = by_key.get(id_key(rid))
        if found is not None:
            paired[rid.lower()] = found
        else:
            rest.append(_Applied(rid, *_type_of(rid), returned.get(rid.lower(), {})))
    pending = [d for d in desired if d.name.startswith("[")]
    for applied, d in pair_in_passes(rest, pending, (_same_assignment, _maybe_same_assignment, _same_slot)):
        paired[applied.id.lower()] = d
    return paired


IDENTIFYING = ("roleDefinitionId", "principalId", "principalType")


def _unpaired_body(rtype: str, returned: dict[str, Any]) -> dict[str, Any]:
    """A role assignment no rendered body could be paired with keeps what identifies it, if ARM said."""
    if not is_role_assignment(rtype):
        return {}
    kept = {k: returned[k] for k in IDENTIFYING if k in returned}
    return {"properties": kept} if kept else {}


def _subscription(ids: list[str]) -> str:
    match = re.match(r"^/subscriptions/([^/]+)", ids[0] if ids else "", flags=re.I)
    return match.group(1) if match else SUBSCRIPTION_PLACEHOLDER


def resource_records(
    deployment: Deployment, remote: dict[str, Any], operations: list[dict[str, Any]]
) -> list[ResourceRecord]:
    """One record per resource ARM applied, with the whole rendered body (location, sku, kind, zones, tags,
    identity, properties; parameters resolved except secure ones): what the offline plan compares with."""
    ids = _applied_ids(remote, operations)
    desired = deployment_resources(_recordable(deployment), _subscription(ids))
    returned = returned_properties(remote, operations)
    paired = _pair(ids, desired, returned)
    api_by_type: dict[str, str] = {}
    for d in desired:
        api_by_type.setdefault(d.type.lower(), d.api_version)
    records: list[ResourceRecord] = []
    for rid in ids:
        rtype, name = _type_of(rid)
        found = paired.get(rid.lower())
        body = found.body if found else _unpaired_body(rtype, returned.get(rid.lower(), {}))
        raw_tags = body.get("tags")
        tags: dict[str, Any] = raw_tags if isinstance(raw_tags, dict) else {}
        records.append(
            ResourceRecord(
                id=rid,
                type=rtype,
                name=name,
                api_version=found.api_version if found and found.api_version else api_by_type.get(rtype.lower(), ""),
                deployment=deployment.name,
                data_bearing=str(tags.get(DATA_TAG, "")).lower() == "true" or rtype.lower() in DATA_BEARING_TYPES,
                properties=body,
            )
        )
    return records


def outputs_of(remote: dict[str, Any]) -> dict[str, Any]:
    raw = (remote.get("properties") or {}).get("outputs") or {}
    # secureString/secureObject outputs would put a secret into state: they are never kept.
    return {
        k: v.get("value") if isinstance(v, dict) else v
        for k, v in raw.items()
        if not (isinstance(v, dict) and str(v.get("type", "")).lower().startswith("secure"))
    }
