from __future__ import annotations

from pathlib import Path

import typer

from hpclz.cli.common import OutputFormat, guarded


def schema(
    out: Path | None = typer.Option(
        None, "--out", metavar="FILE", help="Write to this file instead of standard output."
    ),
) -> None:
    """Print the JSON Schema of the config (for yaml-language-server and editors)."""
    with guarded("schema", OutputFormat.TEXT):
        from hpclz.services.schema import config_schema_json

        text = config_schema_json()
        if out is None:
            typer.echo(text)
        else:
            out.write_text(text + "\n", encoding="utf-8")
            typer.echo(f"wrote {out}  (add `# yaml-language-server: $schema={out}` to the top of your config)")
