"""`hpclz deploy` for people: what the confirmation lists, and how the run ended."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpclz.cli.views.findings import print_findings

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.render.model import DeploymentPlan
    from hpclz.services.deploy import DeployResult


def show_plan(err: Console, plan: DeploymentPlan, unchanged: set[str]) -> None:
    """Before the question: each deployment, and whether deploy would apply or skip it."""
    lines = [
        f"  {'unchanged' if d.name in unchanged else 'apply':9} {d.name} ({d.component})" for d in plan.deployments
    ]
    err.print("Deployments:\n" + "\n".join(lines), highlight=False)


def show(out: Console, result: CommandResult[DeployResult]) -> None:
    body = result.payload
    print_findings(out, result.findings)
    for d in body.deployments:
        if d.error:
            out.print(f"[red]✗[/] {d.name}: {d.error}")
        elif d.blocked_by:
            out.print(f"[yellow]-[/] {d.name}: not started ({', '.join(d.blocked_by)} did not succeed)")
    if result.ok:
        _show_success(out, body)
    elif body.stage in ("validate", "preflight"):
        out.print(f"[red]✗[/] {body.stage} failed; nothing was deployed")
    elif body.cancelled:
        out.print("cancelled: nothing deployed")
    else:
        out.print(f"[red]✗[/] deploy did not finish; fix the error and rerun `hpclz deploy {body.file}` to resume")


def _show_success(out: Console, body: DeployResult) -> None:
    out.print(f"[green]✓[/] deployed {body.file} (state: {body.state_location})")
    if body.outputs:
        out.print("\n[bold]Outputs[/]")
        for key, value in sorted(body.outputs.items()):
            out.print(f"  {key} = {value}", highlight=False, soft_wrap=True)
    out.print("\n[bold]Next steps[/]")
    for step in body.next_steps:
        out.print(f"  {step}", highlight=False, soft_wrap=True)
