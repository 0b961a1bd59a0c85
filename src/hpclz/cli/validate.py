from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded, print_findings
from hpclz.findings import Severity

if TYPE_CHECKING:
    from rich.console import Console


def validate(
    config: Path = typer.Argument(..., help="Landing-zone config (YAML)."),
    fail_level: Severity = typer.Option(
        Severity.ERROR, "--fail-level", help="Exit non-zero on findings of this severity or worse."
    ),
    suppress: list[str] = typer.Option([], "--suppress", help="Rule ID to silence (repeatable)."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Check a config's shape, then every landing-zone rule."""
    with guarded("validate", output):
        from hpclz.findings import count_by_severity
        from hpclz.services.validate import validate as run_validate

        result = run_validate(config, fail_level=fail_level, suppress=suppress)

        def human(out: Console) -> None:
            print_findings(out, result.findings)
            counts = count_by_severity(result.findings)
            summary = f"{counts['error']} errors, {counts['warning']} warnings, {counts['info']} info"
            if result.suppressed:
                summary += f"; suppressed: {', '.join(result.suppressed)}"
            mark = "[green]✓[/]" if result.ok else "[red]✗[/]"
            verdict = "is valid" if result.ok else f"fails at --fail-level {result.fail_level.value}"
            out.print(f"{mark} {result.file} {verdict} ({summary}; {result.rules_run} rules checked)")

        finish("validate", output, result.exit_code, result.payload(), result.findings, human)
