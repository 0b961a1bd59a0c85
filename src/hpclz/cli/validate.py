from __future__ import annotations

from pathlib import Path

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded
from hpclz.severity import Severity


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
        from hpclz.cli.views import validate as view
        from hpclz.services.validate import ValidateOptions
        from hpclz.services.validate import validate as run_validate

        options = ValidateOptions(config, fail_level=fail_level, suppress=tuple(suppress))
        finish(run_validate(options), output, view.show)
