"""Drift: what changed in Azure outside hpclz since the last apply, found by reading each recorded
resource back (`hpclz plan --refresh`).

State records each resource's rendered body. Only what that body sets to a literal value is compared
(an ARM expression such as `[parameters('x')]` cannot be evaluated offline), and only those keys of the
live resource: what Azure adds (provisioningState, defaults, read-only IDs) is not drift. A drifted
resource is put right by submitting its deployment again: in incremental mode ARM sets every property
the template declares and creates what is missing
(https://learn.microsoft.com/azure/azure-resource-manager/templates/deployment-modes#incremental-mode).
"""

from __future__ import annotations

from typing import Any

from hpclz.plan import policies
from hpclz.plan.attributes import masked, unchanged_count
from hpclz.plan.changeset import Action, PropertyChange, ResourceChange, Verdict
from hpclz.plan.offline import diff_values
from hpclz.plan.resources import resource_label
from hpclz.state.model import ResourceRecord

GROUP = "microsoft.resources/resourcegroups"
# What Azure keeps in a body but is not the resource's configuration.
NOT_CONFIG = frozenset({"provisioningState", "id", "etag", "type", "apiVersion", "name", "existing"})

PUT_BACK = Verdict(
    reason="changed outside hpclz; deploy submits its deployment again, which sets it back",
    source="https://learn.microsoft.com/azure/azure-resource-manager/templates/deployment-modes#incremental-mode",
)
RECREATE = Verdict(
    reason="deleted outside hpclz; deploy submits its deployment again, which creates it",
    source=PUT_BACK.source,
)


# diff_values compares the template (before) with Azure (after); deploy undoes Azure's side.
_PUT_BACK_KIND = {Action.MODIFY: Action.MODIFY, Action.DELETE: Action.CREATE, Action.CREATE: Action.DELETE}


def literal(value: Any) -> bool:
    return not (isinstance(value, str) and value.startswith("[") and not value.startswith("[["))


def projection(recorded: Any, live: Any) -> tuple[Any, Any]:
    """`recorded` less its expressions, and `live` cut down to the same keys."""
    if isinstance(recorded, dict):
        live_map = live if isinstance(live, dict) else {}
        pairs = {
            k: projection(v, live_map.get(k)) for k, v in recorded.items() if k not in NOT_CONFIG and _has_literal(v)
        }
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items() if k in live_map}
    if _named(recorded):
        return _named_projection(recorded, live)
    if isinstance(recorded, list) and not all(literal(x) and not isinstance(x, dict | list) for x in recorded):
        return None, None  # lists of objects with expressions inside: not compared offline
    return recorded, live


def _named(items: Any) -> bool:
    """A list of objects each named by a literal (security rules, subnets): compared item by item."""
    return (
        isinstance(items, list)
        and bool(items)
        and all(isinstance(x, dict) and isinstance(x.get("name"), str) and literal(x["name"]) for x in items)
    )


def _named_projection(recorded: list[dict[str, Any]], live: Any) -> tuple[Any, Any]:
    """Items matched by name. An item Azure has and the template does not declare is kept too: a PUT
    reapplies the whole list, so deploy would remove it (incremental mode reapplies every property of a
    resource it deploys; it does not merge arrays)."""
    found = {str(x.get("name")): x for x in live if isinstance(x, dict)} if isinstance(live, list) else {}
    wanted, present = [], []
    for item in recorded:
        mine, theirs = projection(item, found.get(item["name"]))
        wanted.append({**mine, "name": item["name"]})
        if item["name"] in found:
            present.append({**theirs, "name": item["name"]})
    declared = {item["name"] for item in recorded}
    present += [{"name": name} for name in found if name not in declared]
    return wanted, present


def _has_literal(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_literal(v) for v in value.values())
    if _named(value):
        return True
    if isinstance(value, list):
        return all(literal(x) and not isinstance(x, dict | list) for x in value)
    return literal(value)


def drift_of(record: ResourceRecord, live: dict[str, Any] | None) -> ResourceChange | None:
    """The drift of one recorded resource against what Azure returned for it (None: it is gone)."""
    base = ResourceChange(
        id=record.id,
        type=record.type,
        name=record.name,
        label=resource_label(record.type, record.name, record.id, record.properties),
        deployment=record.deployment,
        action=Action.CREATE,
        data_bearing=record.data_bearing or policies.is_data_bearing(record.type),
        verdict=RECREATE,
    )
    if live is None:
        return base
    if record.type.lower() == GROUP or not record.properties:
        return None
    body = record.properties if "properties" in record.properties else {"properties": record.properties}
    before, after = projection(body, live)
    # Shown as Azure has it now -> what deploy puts back. A key Azure does not return (write-only ones such
    # as customData) is not compared; a named item (a security rule) missing or extra is.
    changes = [
        PropertyChange(
            path=path,
            kind=_PUT_BACK_KIND[kind],
            before=masked(record.type, path, now),
            after=masked(record.type, path, wanted),
            verdict=PUT_BACK,
        )
        for path, kind, wanted, now in diff_values(before, after)
        if kind is Action.MODIFY or path.endswith("]")
    ]
    if not changes:
        return None
    update = {"action": Action.MODIFY, "verdict": PUT_BACK, "changes": changes}
    return base.model_copy(update={**update, "unchanged_attributes": unchanged_count(before, changes)})


def as_azure_has_it(recorded: Any, live: Any) -> Any:
    """`recorded` with what Azure has now wherever drift is compared (`projection`): the body `deploy
    --refresh-only` keeps in state, so the next plan diffs the config against Azure as it is. What Azure does
    not return (write-only values) and what is an expression stays as recorded; a named item Azure dropped
    goes, one it added comes in (less Azure's read-only keys)."""
    if isinstance(recorded, dict):
        if not isinstance(live, dict):
            return recorded
        return {
            k: as_azure_has_it(v, live[k]) if k in live and k not in NOT_CONFIG and _has_literal(v) else v
            for k, v in recorded.items()
        }
    if _named(recorded):
        if not isinstance(live, list):
            return recorded
        found = {str(x.get("name")): x for x in live if isinstance(x, dict)}
        kept = [as_azure_has_it(item, found[item["name"]]) for item in recorded if item["name"] in found]
        declared = {item["name"] for item in recorded}
        added = [{k: v for k, v in x.items() if k not in NOT_CONFIG or k == "name"} for n, x in found.items()]
        return kept + [x for x in added if x.get("name") not in declared]
    if isinstance(recorded, list) and not all(literal(x) and not isinstance(x, dict | list) for x in recorded):
        return recorded
    return live if literal(recorded) else recorded
