from __future__ import annotations

from pathlib import Path

import typer

from hpclz.cli.common import OutputFormat, guarded


def schema(
    out: Path | None = typer.Option(
        None, "--out", metavar="FILE", help="Write to this file instead of standard output."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out file."),
) -> None:
    """Print the JSON Schema of the config (for yaml-language-server and editors)."""
    with guarded("schema", OutputFormat.TEXT):
        from hpclz.config.schema import config_schema_json
        from hpclz.services.schema import SchemaOptions, write_config_schema

        if out is None:
            typer.echo(config_schema_json())
        else:
            write_config_schema(SchemaOptions(out, force=force))
            typer.echo(f"wrote {out}  (add `# yaml-language-server: $schema={out}` to the top of your config)")
