from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hpclz.cli.common import OUTPUT_OPTION, SEVERITY_STYLES, OutputFormat, finish, guarded, hidden_note, shown
from hpclz.severity import Severity

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.findings import Finding


def validate(
    config: Path = typer.Argument(..., metavar="CONFIG", help="Landing-zone config (YAML)."),
    fail_level: Severity = typer.Option(
        Severity.ERROR,
        "--fail-level",
        metavar="error|warning|info",
        help="Exit non-zero on findings of this severity or worse.",
    ),
    suppress: list[str] = typer.Option([], "--suppress", metavar="ID", help="Rule ID to silence (repeatable)."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Check a config's shape, then every landing-zone rule."""
    with guarded("validate", output):
        from hpclz.services.validate import validate as run_validate

        result = run_validate(config, fail_level=fail_level, suppress=suppress)
        payload = result.payload()

        def human(out: Console) -> None:
            visible, hidden = shown(result.findings)
            for finding in visible:
                _print_finding(out, finding)
            if hidden:
                out.print(f"[dim]{_esc(hidden_note(hidden))}[/]")
            counts = payload["counts"]
            summary = ", ".join(_count(counts[s], s) for s in ("error", "warning", "info"))
            if result.suppressed:
                summary += f"; suppressed: {', '.join(result.suppressed)}"
            mark = "[green]✓[/]" if result.ok else "[red]✗[/]"
            verdict = "is valid" if result.ok else f"fails at --fail-level {result.fail_level.value}"
            out.print(f"{mark} {_esc(result.file)} {verdict} ({summary}; {result.rules_run} rules checked)")

        finish("validate", output, result.exit_code, payload, result.findings, human)


def _count(n: int, severity: str) -> str:
    text = f"{n} {severity}{'s' if severity != 'info' and n != 1 else ''}"
    return f"[{SEVERITY_STYLES[severity]}]{text}[/]" if n else text


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _print_finding(out: Console, f: Finding) -> None:
    """Compiler-style first line (clickable file:line), then where in the config, what is wrong and the fix."""
    where = f.location() or "(config)"
    style = SEVERITY_STYLES[f.severity.value]
    out.print(f"{_esc(where)}: [{style}]{f.severity.value}[/] [bold]{f.rule_id}[/] {_esc(f.title)}")
    out.print(f"    {f'[dim]{_esc(f.path)}:[/] ' if f.path else ''}{_esc(f.message)}")
    if f.fix:
        out.print(f"    [green]fix:[/] {_esc(f.fix)}")
    if f.docs:
        out.print(f"    [dim]docs: {_esc(f.docs)}[/]")
