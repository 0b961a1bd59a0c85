"""`hpclz validate` for people: each finding compiler-style, then one verdict line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from hpclz.cli.views.findings import SEVERITY_STYLES, hidden_note, shown
from hpclz.findings import count_by_severity

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.findings import Finding
    from hpclz.output import CommandResult
    from hpclz.services.validate import ValidateResult


def show(out: Console, result: CommandResult[ValidateResult]) -> None:
    body = result.payload
    visible, hidden = shown(result.findings)
    for finding in visible:
        _print_finding(out, finding)
    if hidden:
        out.print(f"[dim]{escape(hidden_note(hidden))}[/]")
    counts = count_by_severity(result.findings)
    summary = ", ".join(_count(counts[s], s) for s in ("error", "warning", "info"))
    if body.suppressed:
        summary += f"; suppressed: {', '.join(body.suppressed)}"
    mark = "[green]✓[/]" if result.ok else "[red]✗[/]"
    verdict = "is valid" if result.ok else f"fails at --fail-level {body.fail_level.value}"
    out.print(f"{mark} {escape(body.file)} {verdict} ({summary}; {body.rules_run} rules checked)")


def _count(n: int, severity: str) -> str:
    text = f"{n} {severity}{'s' if severity != 'info' and n != 1 else ''}"
    return f"[{SEVERITY_STYLES[severity]}]{text}[/]" if n else text


def _print_finding(out: Console, f: Finding) -> None:
    """Compiler-style first line (clickable file:line), then where in the config, what is wrong and the fix."""
    where = f.location() or "(config)"
    style = SEVERITY_STYLES[f.severity.value]
    out.print(f"{escape(where)}: [{style}]{f.severity.value}[/] [bold]{f.rule_id}[/] {escape(f.title)}")
    out.print(f"    {f'[dim]{escape(f.path)}:[/] ' if f.path else ''}{escape(f.message)}")
    if f.fix:
        out.print(f"    [green]fix:[/] {escape(f.fix)}")
    if f.docs:
        out.print(f"    [dim]docs: {escape(f.docs)}[/]")
