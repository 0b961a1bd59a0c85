"""What `hpclz plan` says deploy or destroy will do to CycleCloud's app role assignments (Microsoft Graph, not ARM).

The same decisions as hpclz.deploy.app_roles, made without writing: deploy makes each assignment the config implies
(`wanted`, the rows of the rendered `cyclecloud/entra-app-roles.json`) that is neither recorded nor already in Graph,
and deletes the recorded ones the config no longer implies; destroy deletes the recorded ones, and only while Graph
still holds that ID for the recorded group and role. Graph is read only where the plan reads Azure anyway (the
refresh of a deployed zone, --what-if, --destroy), through the adapter (hpclz.azure.graph); a plan that reads nothing
lists from state and config, and a Graph that cannot be read leaves the plan as it is with one line saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hpclz.config.loader import LoadedConfig
from hpclz.deploy.app_roles import WHO_MAY, _key, roles_of, same_assignment, wanted
from hpclz.plan.changeset import Action, AppRoleChange, EntraChanges
from hpclz.state.model import AppRoleAssignmentRecord, StateDocument

if TYPE_CHECKING:
    from hpclz.azure.graph import Graph

NOT_READ = "this plan reads nothing from Azure: no deployed zone, --refresh=false or --offline"
# Said of every Entra change: Graph decides apart from ARM, and deploy goes on without it (hpclz.deploy.app_roles).
NOTE = (
    "made through Microsoft Graph after the ARM deployments; Graph may refuse them without failing the deploy "
    f"(then deploy lists what is missing as next steps): {WHO_MAY}"
)
# Destroy: revoke reports a refused delete as failed and keeps its record (hpclz.deploy.app_roles.revoke).
DESTROY_NOTE = (
    "deleted through Microsoft Graph after the ARM resources; a delete Graph refuses fails the destroy and stays "
    f"recorded, so a later destroy tries again: {WHO_MAY}"
)


@dataclass
class _Seen:
    """What Graph holds: the app's service principal (its ID and roles; None when the tenant has none) and, per
    service principal read, its assignments by ID."""

    sp_id: str | None = None
    roles: dict[str, str] = field(default_factory=dict)  # app role value -> app role ID
    held: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def holds(self, record: AppRoleAssignmentRecord) -> dict[str, Any] | None:
        return self.held.get(record.resource_id, {}).get(record.id)


def _look(graph: Graph, app_id: str | None, records: list[AppRoleAssignmentRecord]) -> tuple[_Seen | None, str | None]:
    """Read Graph as deploy (the app's service principal, `app_id`) and destroy (what the records name) read it, and
    write nothing; None and why, where it cannot be read."""
    from hpclz.azure.graph import GraphError

    why = graph.settings.graph_refusal()
    if why is not None:
        return None, why
    seen = _Seen()
    try:
        sp = graph.service_principal(app_id) if app_id is not None else None
        if sp is not None:
            seen.sp_id = str(sp["id"])
            seen.roles = roles_of(sp)
        for sp_id in sorted({r.resource_id for r in records} | ({seen.sp_id} if seen.sp_id else set())):
            seen.held[sp_id] = {str(a.get("id")): a for a in graph.assigned_to(sp_id)}
    except GraphError as exc:
        return None, exc.one_line()
    return seen, None


def _line(
    app_id: str, group: str, app_role: str, action: Action, *, id_: str = "", path: str = "", reason: str = ""
) -> AppRoleChange:
    where = f"{path} ({group})" if path else f"group {group}"
    return AppRoleChange(
        id=id_,
        name=f"{app_role} for {group}",
        label=f"{app_role} for {where}",
        action=action,
        app_id=app_id,
        principal_id=group,
        app_role=app_role,
        path=path,
        reason=reason,
    )


def _recorded(record: AppRoleAssignmentRecord, action: Action, path: str = "", reason: str = "") -> AppRoleChange:
    return _line(record.app_id, record.principal_id, record.app_role, action, id_=record.id, path=path, reason=reason)


def _matches(record: AppRoleAssignmentRecord, app_id: str, group: str, app_role: str) -> bool:
    return record.app_id.lower() == app_id.lower() and _key(record.principal_id, record.app_role) == _key(
        group, app_role
    )


def planned_grant(loaded: LoadedConfig, doc: StateDocument | None, graph: Graph | None) -> EntraChanges | None:
    """What deploy's grant will do; None when the config implies no assignment and state records none. `graph`:
    read it (the plan reads Azure), else plan from state and config."""
    want = wanted(loaded)
    records = list(doc.app_role_assignments) if doc is not None else []
    if not want and not records:
        return None
    entra = loaded.config.identity.cyclecloud_entra
    app_id = entra.client_id if entra is not None else records[0].app_id
    seen, why = _look(graph, app_id, records) if graph is not None else (None, NOT_READ)
    result = EntraChanges(app_id=app_id, graph_read=seen is not None, not_read=why, note=NOTE)
    if seen is not None:  # deploy forgets a record whose ID Graph no longer holds (made again below when wanted)
        records = [r for r in records if seen.holds(r) is not None]
    matched: set[str] = set()
    for w in want:
        record = next((r for r in records if _matches(r, app_id, w.group, w.app_role)), None)
        if record is not None and (seen is None or _proved(seen, record)):
            matched.add(record.id)
            result.assignments.append(_recorded(record, Action.NO_CHANGE, w.path))
            continue
        action, reason = _to_make(seen, w.group, w.app_role, app_id)
        result.assignments.append(_line(app_id, w.group, w.app_role, action, path=w.path, reason=reason))
    if seen is None or seen.sp_id is not None:  # without the service principal deploy stops before any delete
        for record in records:
            if record.id not in matched:
                _unwanted(result, seen, record)
    return result


def _to_make(seen: _Seen | None, group: str, app_role: str, app_id: str) -> tuple[Action, str]:
    if seen is None:
        return Action.CREATE, ""
    if seen.sp_id is None:
        return Action.CREATE, (
            f"Microsoft Graph has no service principal for CycleCloud's app {app_id} in this tenant: deploy cannot "
            f"make it until one exists (az ad sp create --id {app_id})"
        )
    role_id = seen.roles.get(app_role)
    if role_id is None:
        return Action.CREATE, f"CycleCloud's app {app_id} defines no app role {app_role}: deploy cannot make it"
    if any(_key(str(a.get("principalId")), str(a.get("appRoleId"))) == _key(group, role_id) for a in _held(seen)):
        return Action.NO_CHANGE, "already in Graph, not made by hpclz: deploy leaves it and destroy never deletes it"
    return Action.CREATE, ""


def _held(seen: _Seen) -> list[dict[str, Any]]:
    return list(seen.held.get(seen.sp_id or "", {}).values())


def _unwanted(result: EntraChanges, seen: _Seen | None, record: AppRoleAssignmentRecord) -> None:
    """A record the config no longer implies: deploy deletes it, with the proof destroy asks for."""
    if seen is not None and not _proved(seen, record):
        result.left_alone.append(f"{record.id}: {_NOT_PROVED}")
        return
    result.assignments.append(_recorded(record, Action.DELETE, reason="the config no longer implies it"))


_NOT_PROVED = "Graph holds this ID for another group or role than state records, not proved hpclz's"


def _proved(seen: _Seen, record: AppRoleAssignmentRecord) -> bool:
    found = seen.holds(record)
    return found is not None and same_assignment(found, record)


def planned_revoke(doc: StateDocument | None, graph: Graph | None) -> EntraChanges | None:
    """What destroy's revoke will delete: recorded assignments only, never one Graph holds without a record; one
    Graph no longer has is not listed (as a resource ARM no longer has)."""
    if doc is None or not doc.app_role_assignments:
        return None
    records = doc.app_role_assignments
    seen, why = _look(graph, None, records) if graph is not None else (None, NOT_READ)
    result = EntraChanges(app_id=records[0].app_id, graph_read=seen is not None, not_read=why, note=DESTROY_NOTE)
    for record in records:
        if seen is not None and seen.holds(record) is None:
            continue
        if seen is not None and not _proved(seen, record):
            result.left_alone.append(f"{record.id}: {_NOT_PROVED}")
            continue
        result.assignments.append(_recorded(record, Action.DELETE))
    return result
