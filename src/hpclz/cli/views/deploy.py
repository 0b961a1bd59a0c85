"""`hpclz deploy` for people: what the confirmation lists, and how the run ended."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpclz.cli.views.findings import print_findings

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.plan.changeset import ChangeSet
    from hpclz.render.model import DeploymentPlan
    from hpclz.services.deploy import DeployResult


def show_plan(err: Console, plan: DeploymentPlan, unchanged: set[str], changes: ChangeSet) -> None:
    """Before the question: the change set exactly as `hpclz plan` prints it, then each deployment and
    whether deploy applies or skips it."""
    from hpclz.cli.views.changeset import print_changeset

    print_changeset(err, changes)
    if changes.mode == "refresh-only":
        return  # no deployment runs
    again = set(changes.resubmit)
    lines = [
        f"  {'unchanged' if d.name in unchanged and d.name not in again else 'apply':9} {d.name} ({d.component})"
        for d in plan.deployments
    ]
    err.print("\nDeployments:\n" + "\n".join(lines), highlight=False)


def show(out: Console, result: CommandResult[DeployResult]) -> None:
    from rich.markup import escape

    body = result.payload
    print_findings(out, result.findings)
    for removed in body.removed:
        mark = "[red]-[/]" if removed["action"] in ("deleted", "already gone") else "[red]✗[/]"
        why = f" ({removed['reason']})" if removed["reason"] else ""
        out.print(f"{mark} {escape(removed['type'])} {escape(removed['id'])}: {removed['action']}{escape(why)}")
    for d in body.deployments:
        if d.error:
            out.print(f"[red]✗[/] {d.name}: {d.error}")
        elif d.blocked_by:
            out.print(f"[yellow]-[/] {d.name}: not started ({', '.join(d.blocked_by)} did not succeed)")
    if result.ok:
        _show_success(out, body)
    elif body.unfinished and not any(d.error or d.blocked_by for d in body.deployments):
        _show_success(out, body)
        for line in body.unfinished:
            out.print(f"[red]✗[/] {escape(line)}", highlight=False, soft_wrap=True)
    elif body.stage in ("validate", "preflight"):
        out.print(f"[red]✗[/] {body.stage} failed; nothing was deployed")
    elif body.cancelled:
        out.print("cancelled: nothing deployed")
    elif body.removed and all(d.status != "failed" for d in body.deployments):
        out.print(f"[red]✗[/] some deletes did not happen; they stay in state: rerun `hpclz deploy {body.file}`")
    else:
        out.print(f"[red]✗[/] deploy did not finish; fix the error and rerun `hpclz deploy {body.file}` to resume")


def _show_refresh_only(out: Console, body: DeployResult) -> None:
    from rich.markup import escape

    if not body.state_updated:
        out.print(f"[green]✓[/] the state matches Azure; nothing to record (state: {body.state_location})")
        return
    for line in body.state_updated:
        out.print(f"  ~ {escape(line)}", highlight=False)
    out.print(
        f"[green]✓[/] state updated to match Azure; nothing was written to Azure (state: {body.state_location}).\n"
        f"`hpclz plan {body.file}` shows what `hpclz deploy` would change to put it back."
    )


def _show_success(out: Console, body: DeployResult) -> None:
    if body.changes is not None and body.changes.mode == "refresh-only":
        _show_refresh_only(out, body)
        return
    out.print(f"[green]✓[/] deployed {body.file} (state: {body.state_location})")
    _show_app_roles(out, body)
    if body.outputs:
        out.print("\n[bold]Outputs[/]")
        for key, value in sorted(body.outputs.items()):
            out.print(f"  {key} = {value}", highlight=False, soft_wrap=True)
    out.print("\n[bold]Next steps[/]")
    for step in body.next_steps:
        out.print(f"  {step}", highlight=False, soft_wrap=True)


def _show_app_roles(out: Console, body: DeployResult) -> None:
    from rich.markup import escape

    roles = body.app_roles
    if roles is None:
        return
    for line in roles.made:
        out.print(
            f"[green]+[/] app role {escape(line.app_role)} for {escape(line.path)} ({line.group})", highlight=False
        )
    for line in roles.removed:
        out.print(f"[red]-[/] app role {escape(line.app_role)} for group {line.group}", highlight=False)
    if roles.refused:
        out.print(f"[yellow]![/] {escape(roles.refused)}", highlight=False, soft_wrap=True)
