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
    if isinstance(recorded, list) and not all(literal(x) and not isinstance(x, dict | list) for x in recorded):
        return None, None  # lists of objects with expressions inside: not compared offline
    return recorded, live


def _has_literal(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_literal(v) for v in value.values())
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
    # as customData) is not compared.
    changes = [
        PropertyChange(path=path, kind=Action.MODIFY, before=now, after=wanted, verdict=PUT_BACK)
        for path, kind, wanted, now in diff_values(before, after)
        if kind is Action.MODIFY
    ]
    if not changes:
        return None
    return base.model_copy(update={"action": Action.MODIFY, "verdict": PUT_BACK, "changes": changes})
