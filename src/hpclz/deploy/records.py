"""Turn a finished ARM deployment into state records: resources with IDs, data flags, rendered bodies, outputs."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hpclz.arm.api_versions import pinned_version
from hpclz.plan.assignments import (
    AssignmentKey,
    is_role_assignment,
    key_of,
    maybe_same,
    pair_in_passes,
    principal_key,
    surely_same,
)
from hpclz.plan.resources import (
    NESTED_DEPLOYMENT,
    SUBSCRIPTION_PLACEHOLDER,
    DesiredResource,
    deployment_resources,
    id_key,
    parent_key,
    parse_resource_id,
)
from hpclz.render.model import DATA_BEARING_TYPES, DATA_TAG, Deployment
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
    """(type, own name) from a resource ID: a child resource is recorded by its last name segment."""
    rtype, name = parse_resource_id(resource_id)
    return rtype, name.rsplit("/", 1)[-1]


def applied_ids(remote: dict[str, Any], operations: list[dict[str, Any]]) -> list[str]:
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


def returned_properties(remote: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Properties ARM gave back for a resource ID (lower): an `outputResources` entry's `properties`, or an
    operation's response content (present only when the deployment asked for `debugSetting`). ARM usually
    gives neither, only IDs: deploy then GETs each role assignment (`fetched` in `resource_records`)."""
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
        return key_of(self.type, self.id, {"properties": self.returned})


def _identity_of(key: str | None) -> str | None:
    """The managed identity (`id_key` form) a principal key names; None for a GUID or other text."""
    return key.removeprefix("identity:") if key and key.startswith("identity:") else None


def referenced_identities(deployment: Deployment) -> set[str]:
    """The managed identities (`id_key` form) whose principal this deployment's role assignments name."""
    found = set()
    for item in _declared(deployment.template):
        if is_role_assignment(str(item.get("type", ""))):
            identity = _identity_of(principal_key((item.get("properties") or {}).get("principalId")))
            if identity:
                found.add(identity)
    return found


class _Keys:
    """Rendered assignments' keys, with a managed identity's principal as ARM's GUID where deploy looked it up,
    so that an assignment ARM returned (GUID principal) is certainly the one for that identity."""

    def __init__(self, principals: Mapping[str, str]):
        self.principals = {k.lower(): v.lower() for k, v in principals.items()}

    def of(self, d: DesiredResource) -> AssignmentKey | None:
        key = key_of(d.type, d.id, d.body)
        if key is None:
            return None
        identity = _identity_of(key.principal)
        guid = self.principals.get(identity) if identity else None
        return dataclasses.replace(key, principal=f"guid:{guid}") if guid else key

    def same(self, applied: _Applied, d: DesiredResource) -> bool:
        return surely_same(applied.key(), self.of(d))

    def compatible(self, applied: _Applied, d: DesiredResource) -> bool:
        """With no properties from ARM only the scope is known: the assignments at one scope pair in order."""
        return maybe_same(applied.key(), self.of(d))


def _same_slot(applied: _Applied, d: DesiredResource) -> bool:
    return (
        not is_role_assignment(d.type)
        and applied.type.lower() == d.type.lower()
        and parent_key(applied.id, applied.name) == parent_key(d.id, d.name)
    )


def _pair(
    ids: list[str], desired: list[DesiredResource], returned: dict[str, dict[str, Any]], keys: _Keys
) -> dict[str, DesiredResource]:
    """ARM's resource ID (lower) -> the rendered resource it is. Literal names match by ID. A role assignment
    pairs by (scope, principal, role definition) where its properties are known (deploy GETs each one, as
    ARM's outputResources carry only IDs); otherwise the assignments at one scope pair in ARM's order, as do
    other expression-named siblings: right only while ARM lists them in template order."""
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
    for applied, d in pair_in_passes(rest, pending, (keys.same, keys.compatible, _same_slot)):
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


def assignment_ids(remote: dict[str, Any], operations: list[dict[str, Any]]) -> list[str]:
    """The role assignments ARM applied in this deployment: the IDs whose properties deploy asks ARM for."""
    return [rid for rid in applied_ids(remote, operations) if is_role_assignment(_type_of(rid)[0])]


def resource_records(
    deployment: Deployment,
    remote: dict[str, Any],
    operations: list[dict[str, Any]],
    *,
    fetched: Mapping[str, Mapping[str, Any]] | None = None,
    principals: Mapping[str, str] | None = None,
) -> list[ResourceRecord]:
    """One record per resource ARM applied, with the whole rendered body (location, sku, kind, zones, tags,
    identity, properties; parameters resolved except secure ones): what the offline plan compares with.

    `fetched`: resource ID -> the `properties` a GET returned (role assignments: roleDefinitionId,
    principalId, scope), which pair each ID with its body whatever order ARM lists them in.
    `principals`: managed identity (`id_key` form) -> its principal GUID, for assignments to an identity."""
    ids = applied_ids(remote, operations)
    desired = deployment_resources(_recordable(deployment), _subscription(ids))
    returned = returned_properties(remote, operations)
    returned.update({rid.lower(): dict(props) for rid, props in (fetched or {}).items()})
    paired = _pair(ids, desired, returned, _Keys(principals or {}))
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
                api_version=(found.api_version if found and found.api_version else api_by_type.get(rtype.lower()))
                # A resource the template no longer declares (destroy settling a run of an older config): the
                # pinned version of its type, so that destroy can still read and delete it.
                or pinned_version(rtype)
                or "",
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
