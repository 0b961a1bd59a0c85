"""Carry out the deletes and replacements a change set shows, as terraform does.

ARM deploys in incremental mode: a resource a template no longer declares is left as it is
(https://learn.microsoft.com/azure/azure-resource-manager/templates/deployment-modes#incremental-mode).
So what the config stopped asking for is deleted here, after every create and update succeeded,
dependants first; and a resource whose immutable property changed is deleted just before its
deployment creates it again. Deleting reuses destroy's engine (tag checks, children before parents,
a group only when it holds nothing else). A record leaves state only once Azure confirmed the delete.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hpclz.azure.arm import Arm
from hpclz.azure.errors import ArmFailure
from hpclz.deploy.destroy import Action, Destroyer, Outcome
from hpclz.render.model import Deployment, DeploymentPlan
from hpclz.state.model import ResourceRecord, StateDocument

# What may leave state. A Defender plan the config stopped asking for is released, not reset (resetting it to Free
# would change the whole subscription, hpclz.plan.policies): its record leaves state too, or every later deploy would
# try again and exit 5.
SETTLED = (Action.DELETED, Action.GONE, Action.RELEASED)
GROUP = "microsoft.resources/resourcegroups"


def dependants_first(plan: DeploymentPlan, doc: StateDocument) -> list[str]:
    """Deployment names, last wave first; deployments the plan no longer has go first of all (nothing
    in the plan can depend on them)."""
    ordered = [d.name for wave in reversed(plan.waves()) for d in wave]
    gone = [name for name in reversed(list(doc.deployments)) if name not in ordered]
    return gone + ordered


def delete_records(
    arm: Arm,
    doc: StateDocument,
    records: Iterable[ResourceRecord],
    order: list[str],
    on_outcome: Callable[[Outcome], None] = lambda _o: None,
    planned: list[Deployment] | None = None,
) -> tuple[list[Outcome], set[str]]:
    """Delete `records` (consent was given before: data-bearing ones too). Returns the outcomes and the
    lower-cased IDs that are gone from Azure, which alone may leave state."""
    chosen = list(records)
    if not chosen:
        return [], set()
    held = _groups_still_holding(doc, chosen)
    chosen = [r for r in chosen if r.id.lower() not in held]
    subset = doc.model_copy(update={"resources": chosen})
    destroyer = Destroyer(arm, subset, order, on_outcome, planned)
    destroyer.run(include_data=True)
    destroyer.outcomes += [Outcome(gid, GROUP, Action.LEFT, why) for gid, why in held.items()]
    gone = {o.id.lower() for o in destroyer.outcomes if o.action in SETTLED}
    # A group deleted whole takes its records with it: they are gone too.
    for outcome in destroyer.outcomes:
        if outcome.action is Action.DELETED and outcome.type.lower() == GROUP:
            prefix = outcome.id.lower() + "/"
            gone |= {r.id.lower() for r in chosen if r.id.lower().startswith(prefix)}
    return destroyer.outcomes, gone


def _groups_still_holding(doc: StateDocument, chosen: list[ResourceRecord]) -> dict[str, str]:
    """Groups to delete that still hold a recorded resource the config keeps: deleting the group whole would
    take that resource with it, so the group stays (and is reported) instead."""
    ids = {r.id.lower() for r in chosen}
    held = {}
    for group in (r for r in chosen if r.type.lower() == GROUP):
        prefix = group.id.lower() + "/"
        kept = [r.name for r in doc.resources if r.id.lower().startswith(prefix) and r.id.lower() not in ids]
        if kept:
            held[group.id.lower()] = f"still holds {kept[0]}, which the config keeps"
    return held


def without(doc: StateDocument, gone: set[str], plan: DeploymentPlan) -> StateDocument:
    """`doc` less the deleted records, and less the records of deployments the plan no longer has once
    they own nothing (so a later deploy does not take them for applied)."""
    updated = doc.model_copy(deep=True)
    updated.resources = [r for r in updated.resources if r.id.lower() not in gone]
    owners = {r.deployment for r in updated.resources}
    planned = {d.name for d in plan.deployments}
    kept = {n: d for n, d in updated.deployments.items() if n in planned or n in owners}
    # A dropped deployment's last run is named as taken down, as destroy names its runs: turned on again, the
    # component is submitted anew instead of adopting that run from ARM's history (hpclz.deploy.runner).
    updated.destroyed_runs = {
        **updated.destroyed_runs,
        **{n: d.correlation_id for n, d in updated.deployments.items() if n not in kept and d.correlation_id},
    }
    updated.deployments = kept
    return updated


def failures(outcomes: list[Outcome]) -> list[Outcome]:
    return [o for o in outcomes if o.action not in SETTLED]


class Removals:
    """The deletes and replacements of one confirmed change set, carried out around the runner."""

    def __init__(
        self, arm: Arm, plan: DeploymentPlan, doc: StateDocument, deletes: Iterable[str], replaces: Iterable[str]
    ):
        self.arm = arm
        self.plan = plan
        self.doc = doc
        self.deletes = {i.lower() for i in deletes}
        replaced = {i.lower() for i in replaces}
        self.replaces: dict[str, list[ResourceRecord]] = {}
        for r in doc.resources:
            if r.id.lower() in replaced:
                self.replaces.setdefault(r.deployment, []).append(r)
        self.outcomes: list[Outcome] = []

    def before_submit(self, d: Deployment) -> ArmFailure | None:
        """Delete what `d` is about to create again; a failure here fails `d` before it is submitted."""
        records = self.replaces.get(d.name, [])
        outcomes, _ = delete_records(
            self.arm, self.doc, records, dependants_first(self.plan, self.doc), planned=list(self.plan.deployments)
        )
        self.outcomes += outcomes
        bad = failures(outcomes)
        if bad:
            return ArmFailure(
                "ReplacementNotDeleted", f"{bad[0].id} was not deleted ({bad[0].reason or bad[0].action})"
            )
        return None

    def after_run(self, doc: StateDocument) -> StateDocument:
        """Delete what the config no longer asks for; the returned state keeps only what is still in Azure."""
        pending = [r for r in doc.resources if r.id.lower() in self.deletes]  # only what the plan showed
        if not pending:
            return doc
        outcomes, gone = delete_records(
            self.arm, doc, pending, dependants_first(self.plan, doc), planned=list(self.plan.deployments)
        )
        self.outcomes += outcomes
        return without(doc, gone, self.plan)
