"""`hpclz destroy` for people: the confirmation's list, each deletion as it happens, and the tally."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpclz.deploy.destroy import is_immutable
from hpclz.deploy.in_flight import InFlight
from hpclz.deploy.runner import Event, Step
from hpclz.deploy.vault_note import vault_note
from hpclz.plan.policies import is_subscription_wide

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.services.destroy import DestroyResult
    from hpclz.state.model import StateDocument

STYLE = {
    "deleted": "green",
    "kept": "cyan",
    "already gone": "dim",
    "left alone": "yellow",
    "left on": "yellow",
    "failed": "bold red",
}


def show_state(err: Console, doc: StateDocument, include_data: bool) -> None:
    """Before the question: how much state lists, and what happens to each data-bearing resource."""
    data = [r for r in doc.resources if r.data_bearing]
    err.print(f"{len(doc.resources)} resources recorded in state, {len(data)} data-bearing:", highlight=False)
    if doc.app_role_assignments:
        err.print(
            f"  DELETE {len(doc.app_role_assignments)} app role assignments hpclz made in CycleCloud's Entra app "
            f"{doc.app_role_assignments[0].app_id}",
            highlight=False,
        )
    for r in data:
        err.print(f"  {'DELETE' if include_data else 'keep'} {r.type} {r.name}", highlight=False)
    for r in doc.resources:
        if is_subscription_wide(r.type):
            err.print(f"  leave on, for the whole subscription: {r.type} {r.name}", highlight=False)
    worm = [r.name for r in data if is_immutable(r)]
    if include_data and worm:
        err.print(
            f"  immutable (WORM): {', '.join(worm)}: Azure refuses to delete blob versions whose retention has not "
            "expired (a locked one cannot be shortened); they, their account and group stay until it has",
            highlight=False,
        )
    vaults = vault_note(data).strip(" ()")
    if include_data and vaults:
        err.print(f"  backups: destroy stops protection first; {vaults}", highlight=False)


def show_outcome(err: Console, outcome: Any) -> None:
    """One line per resource as the destroyer reaches it (hpclz.deploy.destroy.Outcome); before that, each hpclz
    deployment found in flight (hpclz.deploy.in_flight.InFlight) and what settling it did (runner events)."""
    if isinstance(outcome, InFlight):
        err.print(
            f"[yellow]in flight[/] {outcome.deployment.name}: {outcome.arm_state} in ARM, {outcome.why}; "
            "destroy cancels it if still running and takes in what it made first",
            highlight=False,
        )
        return
    if isinstance(outcome, Event):
        if outcome.step is not Step.RESOURCE:  # each resource shows once more below, as destroy reaches it
            err.print(f"  {outcome.deployment}: {outcome.step.value} {outcome.message}".rstrip(), highlight=False)
        return
    style = STYLE.get(outcome.action.value, "")
    reason = f" ({outcome.reason})" if outcome.reason else ""
    err.print(f"[{style}]{outcome.action.value}[/] {outcome.type} {outcome.id.rsplit('/', 1)[-1]}{reason}")


def show(out: Console, result: CommandResult[DestroyResult]) -> None:
    body = result.payload
    if body.cancelled:
        out.print("cancelled: nothing deleted")
        return
    if not body.outcomes:
        out.print(f"nothing to destroy: the state of {body.file} lists no resources")
        return
    deleted = sum(1 for o in body.outcomes if o["action"] == "deleted")
    out.print(f"{deleted} deleted, {len(body.kept)} kept, {len(body.failed)} failed")
    for o in body.outcomes:
        if o["action"] == "failed":
            out.print(f"[red]✗[/] {o['id']}: {o['reason']}")
    if body.kept:
        out.print("Kept (data): rerun with --include-data to delete them too.")
