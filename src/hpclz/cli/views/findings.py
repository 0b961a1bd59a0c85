"""Findings as text, shared by every command's view."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.findings import Finding

SEVERITY_STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def shown(findings: list[Finding]) -> tuple[list[Finding], list[str]]:
    """The findings text output prints, and the IDs of repeating reports (Rule.repeats) it leaves to --verbose."""
    from hpclz.cli.common import is_verbose

    if is_verbose():
        return findings, []
    hidden = sorted({f.rule_id for f in findings if f.repeats})
    return [f for f in findings if not f.repeats], hidden


def hidden_note(hidden: list[str]) -> str:
    return f"{', '.join(hidden)} not shown: it reports the same on every run; --verbose shows it" if hidden else ""


def print_findings(out: Console, findings: list[Finding]) -> None:
    findings, hidden = shown(findings)
    for f in findings:
        # Paths such as compute.partitions[gpu] would otherwise be eaten as rich markup.
        where = escape(f.location() or f.path)
        out.print(
            f"{where}: [{SEVERITY_STYLES[f.severity.value]}]{f.severity.value}[/] [bold]{f.rule_id}[/] {escape(f.message)}"
            + (f" [dim]({escape(f.path)})[/]" if f.path and f.line else "")
        )
        if f.fix:
            out.print(f"    [dim]fix:[/] {escape(f.fix)}")
    if hidden:
        out.print(f"[dim]{escape(hidden_note(hidden))}[/]")
