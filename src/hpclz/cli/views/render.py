"""`hpclz render` for people: the deployments in order, notes, and which gates ran."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from hpclz.cli.views.findings import print_findings

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.services.render import RenderResult


def show(console: Console, result: CommandResult[RenderResult]) -> None:
    body = result.payload
    print_findings(console, result.findings)
    if body.plan is None or not body.written:
        console.print(f"[red]✗[/] {body.file} has errors; nothing was rendered")
        return
    for index, d in enumerate(body.plan.deployments, start=1):
        where = d.resource_group or "subscription"
        after = f" after {', '.join(d.depends_on)}" if d.depends_on else ""
        console.print(f"{index:2d}. {d.name} [dim]({where}, {len(d.resources())} resources{after})[/]")
    for note in body.notes:
        console.print(f"[dim]note:[/] {note}")
    # The VM payloads and node scripts always; templates only when they come within half of a limit (they are far
    # below it).
    for use in body.limits:
        if "Data" in use.what or "CloudInit" in use.what or use.headroom_pct < 50:
            console.print(f"[dim]limit:[/] {escape(use.line())}")
    ran = [f"{g} (cached)" if g in body.gates_cached else g for g in body.gates_run]
    gates_text = f"; gates passed: {', '.join(ran)}" if ran else ""
    if not result.ok:
        gates_text = f"; gates run: {', '.join(ran)}"
    for gate, reason in sorted(body.gates_not_run.items()):
        gates_text += f"; {gate} not run ({reason})"
    mark = "[green]✓[/]" if result.ok else "[red]✗[/]"
    console.print(f"{mark} wrote {len(body.written)} files to {body.out_dir}{gates_text}")
