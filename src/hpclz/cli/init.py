from __future__ import annotations

from pathlib import Path

import typer

from hpclz.cli.common import OutputFormat, guarded


def init(
    preset: str = typer.Option(
        "ai-training", "--preset", "-p", metavar="NAME", help="energy, finance, manufacturing or ai-training."
    ),
    out: Path = typer.Option(Path("hpclz.yaml"), "--out", metavar="FILE", help="Where to write the starter config."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a starter config from a sector preset."""
    with guarded("init", OutputFormat.TEXT):
        from hpclz.services.init import InitOptions, write_preset

        written = write_preset(InitOptions(preset, out, force=force))
        typer.echo(
            f"wrote {written.config} from preset '{preset}' and {written.schema} (editor completion); "
            f"next: hpclz validate {written.config}"
        )
