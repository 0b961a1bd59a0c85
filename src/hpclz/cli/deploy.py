from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, console, finish, guarded
from hpclz.errors import ExitCode, HpclzError

if TYPE_CHECKING:
    from hpclz.render.model import DeploymentPlan


def ask(question: str, yes: bool) -> bool:
    """--yes answers; otherwise a person must, so a script without --yes is refused, not left hanging."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise HpclzError(f"{question} needs confirmation: pass --yes to run without a prompt", exit_code=ExitCode.USAGE)
    return typer.confirm(question, default=False, err=True)


def deploy(
    config: Path = typer.Argument(..., metavar="CONFIG", help="Landing-zone config (YAML)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Deploy without asking for confirmation."),
    plan: Path | None = typer.Option(
        None, "--plan", metavar="FILE", help="Apply a plan saved by `hpclz plan --out FILE`."
    ),
    suppress: list[str] = typer.Option([], "--suppress", metavar="ID", help="Rule ID to silence (repeatable)."),
    over_budget: bool = typer.Option(
        False, "--over-budget", help="Deploy even when the cost estimate exceeds budget.monthly_usd."
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Preflight against Azure, then deploy in dependency order with a locked, resumable state."""
    with guarded("deploy", output):
        from hpclz.cli.progress import Progress
        from hpclz.cli.views import deploy as view
        from hpclz.services.deploy import deploy as run_deploy

        err = console(stderr=True)
        progress: Progress | None = None

        def confirm(the_plan: DeploymentPlan, unchanged: set[str]) -> bool:
            nonlocal progress
            view.show_plan(err, the_plan, unchanged)
            subscription = the_plan.subscription_id or os.environ.get("AZURE_SUBSCRIPTION_ID", "?")
            ok = ask(f"Deploy {config} to subscription {subscription}?", yes)
            if ok:
                progress = Progress(err, [d.name for d in the_plan.deployments]).__enter__()
            return ok

        def on_event(event: Any) -> None:
            if progress is not None:
                progress(event)

        try:
            result = run_deploy(
                config, plan_file=plan, confirm=confirm, on_event=on_event, suppress=suppress, over_budget=over_budget
            )
        finally:
            if progress is not None:
                progress.__exit__(None, None, None)
        finish(result, output, view.show)
