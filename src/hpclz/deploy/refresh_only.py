"""`hpclz deploy --refresh-only`, terraform's `apply -refresh-only`
(https://developer.hashicorp.com/terraform/cli/commands/plan#planning-modes): read the recorded resources back,
show what changed outside hpclz, and after a yes record it in state. Nothing is written to Azure; the next
`hpclz plan` then compares the config with Azure as it is and shows what a deploy would put back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hpclz.config.loader import LoadedConfig
from hpclz.errors import ExitCode
from hpclz.plan.changeset import Action, ChangeSet, StateRef
from hpclz.plan.unchanged import unchanged_deployments
from hpclz.render.model import DeploymentPlan
from hpclz.state.backend import StateBackend
from hpclz.state.identity import ZoneIdentity, refuse_foreign_state

REFRESH_ONLY = "refresh-only"


def refresh_only(
    loaded: LoadedConfig,
    plan: DeploymentPlan,
    arm: Any,
    backend: StateBackend,
    result: Any,
    confirm: Callable[[DeploymentPlan, set[str], ChangeSet], bool],
) -> ExitCode:
    """`result` is the DeployResult to fill: the drift shown (`changes`) and what state now records."""
    from hpclz.azure.errors import azure_errors
    from hpclz.deploy.refresh import attach_drift, read_back, record_drift

    result.state_location = backend.location
    with backend.lock("deploy"):
        doc = backend.read()
        identity = ZoneIdentity.of_config(loaded.config, arm.subscription_id)
        refuse_foreign_state(doc, identity, backend.location, str(loaded.file))
        changes = ChangeSet(
            mode=REFRESH_ONLY, landing_zone=plan.landing_zone, environment=plan.environment, state=StateRef.of(doc)
        )
        result.changes = changes
        if doc is None or not doc.resources:
            changes.refreshed = True  # nothing recorded: nothing to read, nothing to change
            return ExitCode.OK
        with azure_errors(f"refresh: reading the {len(doc.resources)} resources recorded in state back from Azure"):
            live = read_back(arm, doc)
        attach_drift(changes, doc, live)
        changes.resubmit = []  # nothing is submitted: the drift is recorded, not put back
        if not changes.drift:
            return ExitCode.OK  # state already matches Azure: it is not rewritten (its serial stays)
        result.stage = "confirm"
        if not confirm(plan, unchanged_deployments(plan, doc), changes):
            result.cancelled = True
            return ExitCode.FAILED
        result.stage = "refresh"
        backend.write(record_drift(doc, live, changes.drift))
    result.state_updated = [
        f"{'removed from state (deleted in Azure)' if r.action is Action.CREATE else 'recorded as Azure has it'}: "
        f"{r.type} {r.name}"
        for r in changes.drift
    ]
    return ExitCode.OK
