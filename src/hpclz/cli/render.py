from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded, print_findings

if TYPE_CHECKING:
    from rich.console import Console


def render(
    config: Path = typer.Argument(..., help="Landing-zone config (YAML)."),
    out: Path = typer.Option(
        Path("rendered"), "--out", "--out-dir", "-d", help="Folder for templates and the manifest."
    ),
    diagram: bool = typer.Option(False, "--diagram", help="Also write a topology picture (Mermaid, DOT, SVG)."),
    gates: bool = typer.Option(True, "--gates/--no-gates", help="Check the templates (ARM schemas, lint, checkov)."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Render ARM templates, parameters and a manifest for every deployment of the landing zone."""
    with guarded("render", output):
        from hpclz.services.render import render as run_render

        result = run_render(config, out, diagram=diagram, gates=gates)

        def human(console: Console) -> None:
            print_findings(console, result.findings)
            if result.plan is None or not result.written:
                console.print(f"[red]✗[/] {result.file} has errors; nothing was rendered")
                return
            for index, d in enumerate(result.plan.deployments, start=1):
                where = d.resource_group or "subscription"
                after = f" after {', '.join(d.depends_on)}" if d.depends_on else ""
                console.print(f"{index:2d}. {d.name} [dim]({where}, {len(d.resources())} resources{after})[/]")
            for note in result.notes:
                console.print(f"[dim]note:[/] {note}")
            ran = [f"{g} (cached)" if g in result.gates_cached else g for g in result.gates_run]
            gates_text = f"; gates passed: {', '.join(ran)}" if ran else ""
            if not result.ok:
                gates_text = f"; gates run: {', '.join(ran)}"
            for gate, reason in sorted(result.gates_not_run.items()):
                gates_text += f"; {gate} not run ({reason})"
            mark = "[green]✓[/]" if result.ok else "[red]✗[/]"
            console.print(f"{mark} wrote {len(result.written)} files to {result.out_dir}{gates_text}")

        finish("render", output, result.exit_code, result.payload(), result.findings, human)
