from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, console, finish, guarded
from hpclz.errors import ExitCode, HpclzError

if TYPE_CHECKING:
    from hpclz.plan.changeset import ChangeSet
    from hpclz.render.model import DeploymentPlan


def ask(question: str, yes: bool) -> bool:
    """--yes answers; otherwise a person must, so a script without --yes is refused, not left hanging."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise HpclzError(f"{question} needs confirmation: pass --yes to run without a prompt", exit_code=ExitCode.USAGE)
    return typer.confirm(question, default=False, err=True)


def typed_consent(reasons: list[str], zone: str) -> bool:
    """Instead of --allow-data-loss / --allow-disruption at a terminal: the person types the zone's name."""
    from rich.markup import escape

    console(stderr=True).print(f"[bold red]This deploy needs consent:[/] {escape('; '.join(reasons))}")
    typed = typer.prompt(
        f"Type the zone name ({zone}) to apply it anyway, anything else to stop",
        default="",
        show_default=False,
        err=True,
    )
    return str(typed).strip() == zone


def deploy(
    config: Path = typer.Argument(..., metavar="CONFIG", help="Landing-zone config (YAML)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Deploy without asking for confirmation."),
    plan: Path | None = typer.Option(
        None, "--plan", metavar="FILE", help="Apply a plan saved by `hpclz plan --out FILE`."
    ),
    allow_data_loss: bool = typer.Option(
        False, "--allow-data-loss", help="Apply changes the plan marks as replace or DATA LOSS."
    ),
    allow_disruption: bool = typer.Option(
        False,
        "--allow-disruption",
        help="Apply changes that drain a partition or restart nodes (drain it through Slurm first, as plan says).",
    ),
    refresh: bool = typer.Option(
        True,
        "--refresh/--no-refresh",
        help="Read the recorded resources back first and put back what changed outside hpclz (the default); "
        "--refresh=false trusts the state.",
        show_default=False,
    ),
    refresh_only: bool = typer.Option(
        False,
        "--refresh-only",
        help="Only record in state what changed outside hpclz (after asking); nothing is written to Azure.",
    ),
    replace: list[str] = typer.Option(
        [], "--replace", metavar="ADDRESS", help="Resource ID (or Type/name) to delete and create again (repeatable)."
    ),
    target: list[str] = typer.Option(
        [],
        "--target",
        metavar="ADDRESS",
        help="Apply only the deployment holding this resource, and what it depends on (repeatable).",
    ),
    suppress: list[str] = typer.Option([], "--suppress", metavar="ID", help="Rule ID to silence (repeatable)."),
    over_budget: bool = typer.Option(
        False, "--over-budget", help="Deploy even when the cost estimate exceeds budget.monthly_usd."
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Show the plan, then deploy exactly it: in dependency order, with a locked, resumable state.

    Refused before any change: NOT ALLOWED changes (always), replacements and data loss without
    --allow-data-loss, drains and restarts without --allow-disruption, another zone's state.

    Then, with identity.cyclecloud_entra, gives identity.groups their CycleCloud app roles through Microsoft
    Graph; what Graph refuses is one line and stays in the next steps (docs/entra-login.md)."""
    with guarded("deploy", output):
        from hpclz.cli.progress import Progress
        from hpclz.cli.views import deploy as view
        from hpclz.deploy.contract import Contract, Scope
        from hpclz.plan.contract import Consent
        from hpclz.services.deploy import DeployOptions
        from hpclz.services.deploy import deploy as run_deploy

        err = console(stderr=True)
        progress: Progress | None = None

        def confirm(the_plan: DeploymentPlan, unchanged: set[str], changes: ChangeSet) -> bool:
            nonlocal progress
            view.show_plan(err, the_plan, unchanged, changes)
            if changes.mode == "refresh-only":
                return ask("Record these changes in the state (nothing is written to Azure)?", yes)
            subscription = the_plan.subscription_id or os.environ.get("AZURE_SUBSCRIPTION_ID", "?")
            ok = ask(f"Deploy {config} to subscription {subscription}?", yes)
            if ok:
                progress = Progress(err, [d.name for d in the_plan.deployments]).__enter__()
            return ok

        def on_event(event: Any) -> None:
            if progress is not None:
                progress(event)
            elif str(event.step) == "waiting":  # a throttled preflight call: say why nothing moves
                err.print(f"{event.deployment}: {event.message}", highlight=False)

        contract = Contract(
            consent=Consent(data_loss=allow_data_loss, disruption=allow_disruption),
            scope=Scope(replace=replace, target=target),
            refresh=refresh,
            refresh_only=refresh_only,
            ask=typed_consent if not yes and sys.stdin.isatty() else None,
        )
        try:
            result = run_deploy(
                DeployOptions(
                    config=config,
                    plan_file=plan,
                    confirm=confirm,
                    on_event=on_event,
                    suppress=tuple(suppress),
                    contract=contract,
                    over_budget=over_budget,
                )
            )
        finally:
            if progress is not None:
                progress.__exit__(None, None, None)
        finish(result, output, view.show)
