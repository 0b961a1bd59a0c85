"""Turn a finished ARM deployment into state records: resources with IDs, data flags, rendered bodies, outputs."""

from __future__ import annotations

import re
from typing import Any

from hpclz.plan.resources import (
    NESTED_DEPLOYMENT,
    SUBSCRIPTION_PLACEHOLDER,
    DesiredResource,
    deployment_resources,
    id_key,
)
from hpclz.render.plan import Deployment
from hpclz.state.model import ResourceRecord

MANAGED_TAG = "hpclz-managed"
DATA_TAG = "hpclz-data"
HASH_TAG = "hpclz-template-hash"
# Types that hold user data even when a template forgot the data tag: destroy keeps them by default.
DATA_BEARING_TYPES = frozenset(
    t.lower()
    for t in (
        "Microsoft.StorageCache/amlFilesystems",
        "Microsoft.NetApp/netAppAccounts/capacityPools/volumes",
        "Microsoft.Storage/storageAccounts",
        "Microsoft.Storage/storageAccounts/blobServices/containers",
    )
)


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
    """Type and parent scope of a resource: where a name that is an ARM expression (a role assignment's
    `[guid(...)]`, unknown offline) can be told apart from its siblings only by order."""
    return id_key(rid[: len(rid) - len(name) - 1])


def _pair(ids: list[str], desired: list[DesiredResource]) -> dict[str, DesiredResource]:
    """ARM's resource ID (lower) -> the rendered resource it is. Literal names match by ID; expression-named
    siblings pair in order, as the offline plan pairs them (so plan compares each body with itself)."""
    by_key = {id_key(d.id): d for d in desired if not d.name.startswith("[")}
    pending: dict[str, list[DesiredResource]] = {}
    for d in desired:
        if d.name.startswith("["):
            pending.setdefault(_slot(d.id, d.name), []).append(d)
    paired: dict[str, DesiredResource] = {}
    for rid in ids:
        found = by_key.get(id_key(rid))
        if found is None:
            siblings = pending.get(_slot(rid, _type_of(rid)[1]), [])
            found = siblings.pop(0) if siblings else None
        if found is not None:
            paired[rid.lower()] = found
    return paired


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
    paired = _pair(ids, desired)
    api_by_type: dict[str, str] = {}
    for d in desired:
        api_by_type.setdefault(d.type.lower(), d.api_version)
    records: list[ResourceRecord] = []
    for rid in ids:
        rtype, name = _type_of(rid)
        found = paired.get(rid.lower())
        body = found.body if found else {}
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
