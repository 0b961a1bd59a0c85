from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, console, finish, guarded, print_findings
from hpclz.errors import ExitCode, HpclzError

if TYPE_CHECKING:
    from rich.console import Console


def ask(question: str, yes: bool) -> bool:
    """--yes answers; otherwise a person must, so a script without --yes is refused, not left hanging."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise HpclzError(f"{question} needs confirmation: pass --yes to run without a prompt", exit_code=ExitCode.USAGE)
    return typer.confirm(question, default=False, err=True)


def deploy(
    config: Path = typer.Argument(..., help="Landing-zone config (YAML)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Deploy without asking for confirmation."),
    plan: Path | None = typer.Option(None, "--plan", help="Apply a plan saved by `hpclz plan --out FILE`."),
    allow_data_loss: bool = typer.Option(
        False, "--allow-data-loss", help="Apply changes the plan marks as replace or DATA LOSS."
    ),
    allow_disruption: bool = typer.Option(
        False,
        "--allow-disruption",
        help="Apply changes that drain a partition or restart nodes (drain it through Slurm first, as plan says).",
    ),
    refresh: bool = typer.Option(
        False, "--refresh", help="Read the recorded resources back first and put back what changed outside hpclz."
    ),
    replace: list[str] = typer.Option(
        [], "--replace", help="Resource ID (or Type/name) to delete and create again (repeatable)."
    ),
    target: list[str] = typer.Option(
        [], "--target", help="Apply only the deployment holding this resource, and what it depends on (repeatable)."
    ),
    suppress: list[str] = typer.Option([], "--suppress", help="Rule ID to silence (repeatable)."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Show the plan, then deploy exactly it: in dependency order, with a locked, resumable state.

    Refused before any change: NOT ALLOWED changes (always), replacements and data loss without
    --allow-data-loss, drains and restarts without --allow-disruption, another zone's state."""
    with guarded("deploy", output):
        from hpclz.cli.progress import Progress
        from hpclz.plan.contract import Consent
        from hpclz.plan.printer import print_changeset
        from hpclz.services.deploy import deploy as run_deploy

        err = console(stderr=True)
        progress: Progress | None = None

        def confirm(the_plan: Any, doc: Any, changes: Any) -> bool:
            nonlocal progress
            print_changeset(err, changes)
            lines = []
            for d in the_plan.deployments:
                same = doc is not None and doc.applied(d.name, d.template_hash(), d.resource_group)
                lines.append(f"  {'unchanged' if same else 'apply':9} {d.name} ({d.component})")
            err.print("\nDeployments:\n" + "\n".join(lines), highlight=False)
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

        try:
            result = run_deploy(
                config,
                plan_file=plan,
                confirm=confirm,
                on_event=on_event,
                suppress=suppress,
                consent=Consent(data_loss=allow_data_loss, disruption=allow_disruption),
                refresh=refresh,
                replace=replace,
                target=target,
            )
        finally:
            if progress is not None:
                progress.__exit__(None, None, None)

        def human(out: Console) -> None:
            from rich.markup import escape

            print_findings(out, result.findings)
            for removed in result.removed:
                mark = "[red]-[/]" if removed["action"] in ("deleted", "already gone") else "[red]✗[/]"
                why = f" ({removed['reason']})" if removed["reason"] else ""
                out.print(f"{mark} {escape(removed['type'])} {escape(removed['id'])}: {removed['action']}{escape(why)}")
            for d in result.deployments:
                if d.error:
                    out.print(f"[red]✗[/] {d.name}: {d.error}")
                elif d.blocked_by:
                    out.print(f"[yellow]-[/] {d.name}: not started ({', '.join(d.blocked_by)} did not succeed)")
            if result.ok:
                out.print(f"[green]✓[/] deployed {result.file} (state: {result.state_location})")
                if result.outputs:
                    out.print("\n[bold]Outputs[/]")
                    for key, value in sorted(result.outputs.items()):
                        out.print(f"  {key} = {value}", highlight=False, soft_wrap=True)
                out.print("\n[bold]Next steps[/]")
                for step in result.next_steps:
                    out.print(f"  {step}", highlight=False, soft_wrap=True)
            elif result.removed and result.stage == "deploy" and all(d.status != "failed" for d in result.deployments):
                out.print(
                    f"[red]✗[/] some deletes did not happen; they stay in state: rerun `hpclz deploy {result.file}`"
                )
            elif result.stage in ("validate", "preflight"):
                out.print(f"[red]✗[/] {result.stage} failed; nothing was deployed")
            elif result.stage == "confirm":
                out.print("nothing deployed")
            else:
                out.print(
                    f"[red]✗[/] deploy did not finish; fix the error and rerun `hpclz deploy {result.file}` to resume"
                )

        finish("deploy", output, result.exit_code, result.payload(), result.findings, human)
