"""CycleCloud's app roles for identity.groups, made through Microsoft Graph after the zone is deployed.

With Entra ID sign-in CycleCloud gives a node account only to users holding the app's Global.Node.User or
Global.Node.Admin role (hpclz.render.entra has the facts and the mapping). CCWS assigns them in its deployment
(Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/entra/ccwEntraApp.bicep l.224-236, the Microsoft Graph Bicep
extension); ARM cannot, so deploy asks Graph for the assignments the config implies that are missing, and records the
ones it made so that destroy deletes exactly those.

Who may: "In delegated scenarios with work or school accounts, the signed-in user must be assigned a supported
Microsoft Entra role ... Directory Synchronization Accounts, Directory Writer, Hybrid Identity Administrator, Identity
Governance Administrator, Privileged Role Administrator, User Administrator, Application Administrator, Cloud
Application Administrator. The roles listed above aren't required when the signed-in user is a native member of the
tenant (member user) and an owner of the resource application" (microsoftgraph/microsoft-graph-docs-contrib@93d551b:
api-reference/v1.0/includes/rbac-for-apis/rbac-approleassignments-apis-write.md, included by
learn.microsoft.com/graph/api/serviceprincipal-post-approleassignedto, "Permissions"). Entra ID is another authority
than the subscription: a refusal leaves the deployed zone as it is, says why in one line, and the assignments still
missing stay in the next steps for someone who may make them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from hpclz.config.loader import LoadedConfig
from hpclz.plan.changeset import APP_ROLE_ASSIGNMENT_TYPE
from hpclz.state.model import AppRoleAssignmentRecord, StateDocument

if TYPE_CHECKING:
    from hpclz.azure.graph import Graph, GraphError
    from hpclz.deploy.destroy import Action, Outcome

# Graph's object type path for an assignment, as destroy names what it deleted (and plan what it will).
ASSIGNMENT_TYPE = APP_ROLE_ASSIGNMENT_TYPE
WHO_MAY = (
    "giving app roles takes an Entra role such as Cloud Application Administrator or Application Administrator, or "
    "ownership of the app's service principal (learn.microsoft.com/graph/api/serviceprincipal-post-approleassignedto)"
)


class AppRoleLine(BaseModel):
    """One app role for one group: where the config names the group, its object ID, the role's value."""

    path: str
    group: str
    app_role: str
    id: str | None = Field(default=None, description="The assignment's Graph ID, when deploy made it.")


class AppRolesResult(BaseModel):
    app_id: str = Field(description="CycleCloud's app (identity.cyclecloud_entra.client_id).")
    made: list[AppRoleLine] = Field(default_factory=list, description="Assignments this deploy made.")
    present: int = Field(0, description="Assignments the config implies that were already there.")
    removed: list[AppRoleLine] = Field(
        default_factory=list, description="Assignments an earlier deploy made that the config no longer implies."
    )
    missing: list[AppRoleLine] = Field(
        default_factory=list, description="Assignments still to make by someone Graph lets (printed as next steps)."
    )
    refused: str | None = Field(default=None, description="Why Graph did not make `missing`, one line.")


@dataclass(frozen=True)
class _Wanted:
    path: str
    group: str
    app_role: str

    def line(self, assignment_id: str | None = None) -> AppRoleLine:
        return AppRoleLine(path=self.path, group=self.group, app_role=self.app_role, id=assignment_id)


def wanted(loaded: LoadedConfig) -> list[_Wanted]:
    from hpclz.render.entra import app_role_assignments
    from hpclz.render.zone import Zone

    if loaded.config.identity.cyclecloud_entra is None:
        return []
    found: dict[tuple[str, str], _Wanted] = {}
    for row in app_role_assignments(Zone(loaded.config)):
        for role in row["app_roles"]:  # a group named twice is given each role once
            found.setdefault(_key(row["group"], role), _Wanted(row["path"], row["group"], role))
    return list(found.values())


def _key(principal: str, role_id: str) -> tuple[str, str]:
    return principal.lower(), role_id.lower()


def roles_of(sp: dict[str, Any]) -> dict[str, str]:
    """A service principal's app roles: value -> ID."""
    return {str(r.get("value")): str(r.get("id")) for r in sp.get("appRoles") or [] if isinstance(r, dict)}


def same_assignment(found: dict[str, Any], record: AppRoleAssignmentRecord) -> bool:
    """Graph's assignment gives the recorded group the recorded app role: the proof that the record's ID is hpclz's."""
    return _key(str(found.get("principalId")), str(found.get("appRoleId"))) == _key(
        record.principal_id, record.app_role_id
    )


class _Granting:
    def __init__(self, graph: Graph, doc: StateDocument, save: Callable[[StateDocument], StateDocument], app_id: str):
        self.graph, self.doc, self.save = graph, doc, save
        self.result = AppRolesResult(app_id=app_id)
        self.settled: set[_Wanted] = set()  # made, found present, or found impossible

    def _keep(self, records: list[AppRoleAssignmentRecord]) -> None:
        self.doc = self.save(self.doc.model_copy(update={"app_role_assignments": records}))

    def run(self, want: list[_Wanted]) -> None:
        sp = self.graph.service_principal(self.result.app_id)
        if sp is None:
            self.result.refused = (
                f"Microsoft Graph has no service principal for CycleCloud's app {self.result.app_id} in this tenant "
                f"(Request_ResourceNotFound): create it (az ad sp create --id {self.result.app_id}, "
                "docs/entra-login.md)"
            )
            self.result.missing = [w.line() for w in want]
            return
        sp_id = str(sp["id"])
        roles = roles_of(sp)
        existing = {_key(str(a.get("principalId")), str(a.get("appRoleId"))): a for a in self.graph.assigned_to(sp_id)}
        self._forget_gone(sp_id, {str(a.get("id")) for a in existing.values()})
        self._prune(sp_id, {_key(w.group, roles[w.app_role]) for w in want if w.app_role in roles})
        undefined = sorted({w.app_role for w in want if w.app_role not in roles})
        for w in want:
            if w.app_role not in roles:
                self.result.missing.append(w.line())
            elif _key(w.group, roles[w.app_role]) in existing:
                self.result.present += 1
            else:
                self._make(sp_id, w, roles[w.app_role])
            self.settled.add(w)
        if undefined:
            self.result.refused = (
                f"CycleCloud's app {self.result.app_id} defines no app role {', '.join(undefined)}: add CCWS's app "
                "roles to it (docs/entra-login.md)"
            )

    def _make(self, sp_id: str, w: _Wanted, role_id: str) -> None:
        made = self.graph.assign(sp_id, w.group, role_id)
        record = AppRoleAssignmentRecord(
            id=str(made["id"]),
            resource_id=sp_id,
            principal_id=w.group,
            app_role_id=role_id,
            app_role=w.app_role,
            app_id=self.result.app_id,
        )
        self._keep([*self.doc.app_role_assignments, record])  # recorded at once: destroy must find it
        self.result.made.append(w.line(record.id))

    def _forget_gone(self, sp_id: str, ids: set[str]) -> None:
        """A recorded assignment of this app that Graph no longer has (removed by hand) is no longer hpclz's."""
        kept = [r for r in self.doc.app_role_assignments if r.resource_id != sp_id or r.id in ids]
        if len(kept) != len(self.doc.app_role_assignments):
            self._keep(kept)

    def _prune(self, sp_id: str, wanted_keys: set[tuple[str, str]]) -> None:
        """What an earlier deploy made that the config no longer implies (a group dropped, another app) goes, with the
        proof destroy asks for (`_proved_delete`)."""
        from hpclz.deploy.destroy import Action

        listed: dict[str, dict[str, dict[str, Any]]] = {}
        for record in list(self.doc.app_role_assignments):
            if record.resource_id == sp_id and _key(record.principal_id, record.app_role_id) in wanted_keys:
                continue
            action = _proved_delete(self.graph, record, listed)
            if action is Action.LEFT:
                continue
            self._keep([r for r in self.doc.app_role_assignments if r.id != record.id])
            if action is Action.DELETED:
                self.result.removed.append(AppRoleLine(path="", group=record.principal_id, app_role=record.app_role))


def grant(
    graph: Graph, loaded: LoadedConfig, doc: StateDocument, save: Callable[[StateDocument], StateDocument]
) -> tuple[StateDocument, AppRolesResult | None]:
    """Make the missing assignments the config implies and record them; None when the config implies none and state
    records none. Never raises for Graph: a refusal is the result's `refused`, and what it left undone is `missing`."""
    from hpclz.azure.graph import GraphError

    entra = loaded.config.identity.cyclecloud_entra
    want = wanted(loaded)
    if not want and not doc.app_role_assignments:
        return doc, None
    app_id = entra.client_id if entra is not None else doc.app_role_assignments[0].app_id
    granting = _Granting(graph, doc, save, app_id)
    why = graph.settings.graph_refusal()
    if why is not None:
        granting.result.refused = f"Microsoft Graph not called: {why}"
        granting.result.missing = [w.line() for w in want]
        return doc, granting.result
    try:
        granting.run(want)
    except GraphError as exc:
        granting.result.refused = _refusal(exc)
        granting.result.missing += [w.line() for w in want if w not in granting.settled]
    return granting.doc, granting.result


def _refusal(exc: GraphError) -> str:
    if exc.refused:
        return f"Microsoft Graph refused the app role assignments ({exc.one_line()}): {WHO_MAY}"
    return f"Microsoft Graph did not make the app role assignments ({exc.one_line()})"


def revoke(
    graph: Graph,
    doc: StateDocument,
    save: Callable[[StateDocument], StateDocument],
    on_outcome: Callable[[Outcome], None] = lambda _o: None,
) -> tuple[StateDocument, list[Outcome]]:
    """Destroy: delete the assignments state records (and only those), one outcome each as destroy reports its
    resources. State is a file anyone can edit and Graph tags nothing, so a record is deleted only when Graph still
    holds that ID for the same group, role and app; otherwise it is left alone. What Graph refuses stays recorded,
    so a later destroy tries again."""
    from hpclz.deploy.destroy import Action, Outcome

    outcomes: list[Outcome] = []
    listed: dict[str, dict[str, dict[str, Any]]] = {}
    for record in list(doc.app_role_assignments):
        action, reason = _revoke_one(graph, record, listed)
        if action in (Action.DELETED, Action.GONE):
            doc = save(
                doc.model_copy(update={"app_role_assignments": [r for r in doc.app_role_assignments if r != record]})
            )
        name = f"servicePrincipals/{record.resource_id}/appRoleAssignedTo/{record.id}"
        outcome = Outcome(name, ASSIGNMENT_TYPE, action, f"{record.app_role} for group {record.principal_id}{reason}")
        on_outcome(outcome)
        outcomes.append(outcome)
    return doc, outcomes


def _revoke_one(
    graph: Graph, record: AppRoleAssignmentRecord, listed: dict[str, dict[str, dict[str, Any]]]
) -> tuple[Action, str]:
    from hpclz.azure.graph import GraphError
    from hpclz.deploy.destroy import Action

    why = graph.settings.graph_refusal()
    if why is not None:
        return Action.FAILED, f": Microsoft Graph not called: {why}"
    try:
        action = _proved_delete(graph, record, listed)
    except GraphError as exc:
        return Action.FAILED, f": {_refusal(exc) if exc.refused else exc.one_line()}"
    if action is Action.LEFT:
        return action, ": Graph holds this ID for another group or role than state records, not proved hpclz's"
    return action, ""


def _proved_delete(
    graph: Graph, record: AppRoleAssignmentRecord, listed: dict[str, dict[str, dict[str, Any]]]
) -> Action:
    """Delete a recorded assignment only while Graph holds its ID for the recorded group and role in the recorded
    app's service principal (listed once per service principal): DELETED, GONE (Graph has no such ID) or LEFT."""
    from hpclz.deploy.destroy import Action

    if record.resource_id not in listed:
        listed[record.resource_id] = {str(a.get("id")): a for a in graph.assigned_to(record.resource_id)}
    found = listed[record.resource_id].get(record.id)
    if found is None:
        return Action.GONE
    if not same_assignment(found, record):
        return Action.LEFT
    return Action.DELETED if graph.unassign(record.resource_id, record.id) else Action.GONE
