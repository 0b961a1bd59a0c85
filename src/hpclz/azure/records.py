"""Turn a finished ARM deployment into state records: resources with IDs, data flags, properties, outputs."""

from __future__ import annotations

from typing import Any

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


def resource_records(
    deployment: Deployment, remote: dict[str, Any], operations: list[dict[str, Any]]
) -> list[ResourceRecord]:
    declared = _declared(deployment.template)
    by_type_name: dict[tuple[str, str], dict[str, Any]] = {}
    api_by_type: dict[str, str] = {}
    for item in declared:
        rtype, name = str(item.get("type", "")), str(item.get("name", ""))
        api_by_type.setdefault(rtype.lower(), str(item.get("apiVersion", "")))
        if not name.startswith("["):
            by_type_name[(rtype.lower(), name.split("/")[-1].lower())] = item
    ids = [o["id"] for o in (remote.get("properties") or {}).get("outputResources") or [] if o.get("id")]
    for op in operations:
        target = (op.get("properties") or {}).get("targetResource") or {}
        if target.get("id") and (op.get("properties") or {}).get("provisioningState") == "Succeeded":
            ids.append(target["id"])
    records: dict[str, ResourceRecord] = {}
    for rid in ids:
        rtype, name = _type_of(rid)
        if rtype.lower() == "microsoft.resources/deployments" or rid.lower() in records:
            continue
        item = by_type_name.get((rtype.lower(), name.lower()), {})
        raw_tags = item.get("tags")
        tags: dict[str, Any] = raw_tags if isinstance(raw_tags, dict) else {}
        records[rid.lower()] = ResourceRecord(
            id=rid,
            type=rtype,
            name=name,
            api_version=str(item.get("apiVersion") or api_by_type.get(rtype.lower(), "")),
            deployment=deployment.name,
            data_bearing=str(tags.get(DATA_TAG, "")).lower() == "true" or rtype.lower() in DATA_BEARING_TYPES,
            properties=item.get("properties") if isinstance(item.get("properties"), dict) else {},
        )
    return list(records.values())


def outputs_of(remote: dict[str, Any]) -> dict[str, Any]:
    raw = (remote.get("properties") or {}).get("outputs") or {}
    # secureString/secureObject outputs would put a secret into state: they are never kept.
    return {
        k: v.get("value") if isinstance(v, dict) else v
        for k, v in raw.items()
        if not (isinstance(v, dict) and str(v.get("type", "")).lower().startswith("secure"))
    }
