"""Findings as text, shared by every command's view."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.findings import Finding

SEVERITY_STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def print_findings(out: Console, findings: list[Finding]) -> None:
    for f in findings:
        # Paths such as compute.partitions[gpu] would otherwise be eaten as rich markup.
        where = escape(f.location() or f.path)
        out.print(
            f"{where}: [{SEVERITY_STYLES[f.severity.value]}]{f.severity.value}[/] [bold]{f.rule_id}[/] {escape(f.message)}"
            + (f" [dim]({escape(f.path)})[/]" if f.path and f.line else "")
        )
        if f.fix:
            out.print(f"    [dim]fix:[/] {escape(f.fix)}")
