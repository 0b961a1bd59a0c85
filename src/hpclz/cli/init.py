from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hpclz.cli.common import OutputFormat, guarded

if TYPE_CHECKING:
    from hpclz.services.init import Answers

DEFAULT_PRESET = "ai-training"


def init(
    preset: str | None = typer.Option(
        None,
        "--preset",
        "-p",
        metavar="NAME",
        help="energy, finance, manufacturing or ai-training. Without it (and without --yes) init asks a few questions.",
    ),
    out: Path = typer.Option(Path("hpclz.yaml"), "--out", metavar="FILE", help="Where to write the starter config."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Ask nothing: the preset (default ai-training) as it is."),
    name: str | None = typer.Option(None, "--name", metavar="NAME", help="The landing zone's name (metadata.name)."),
    region: str | None = typer.Option(None, "--region", metavar="REGION", help="The Azure region (metadata.location)."),
) -> None:
    """Write a starter config from a sector preset, asking a few questions (sector, name, region, partitions,
    Lustre) unless --preset or --yes is given; the config written validates."""
    with guarded("init", OutputFormat.TEXT):
        from hpclz.services.init import Answers, InitOptions, write_preset

        answers: Answers | None
        if preset is None and not yes:
            preset, answers = _ask(name, region)
        else:
            preset = preset or DEFAULT_PRESET
            answers = Answers(name=name, region=region) if name or region else None
        written = write_preset(InitOptions(preset, out, force=force, answers=answers))
        typer.echo(
            f"wrote {written.config} from preset '{preset}' and {written.schema} (editor completion); "
            f"next: hpclz validate {written.config}"
        )


def _ask(name: str | None, region: str | None) -> tuple[str, Answers]:
    """The questions, each with the preset's value as its default (Enter keeps it)."""
    from hpclz.package_data import preset_names
    from hpclz.services.init import Answers, preset_facts

    preset = typer.prompt(f"Sector preset ({', '.join(preset_names())})", default=DEFAULT_PRESET)
    facts = preset_facts(preset)
    partitions = []
    answers_name = typer.prompt("Landing zone name", default=name or facts.name)
    answers_region = typer.prompt("Azure region", default=region or facts.region)
    for partition, size, nodes in facts.partitions:
        new_size = typer.prompt(f"Partition {partition}: VM size", default=size)
        new_nodes = typer.prompt(f"Partition {partition}: max nodes (0 leaves it out)", default=nodes, type=int)
        partitions.append((partition, new_size, new_nodes))
    lustre = None
    if facts.lustre_tib is not None:
        lustre = typer.prompt("Managed Lustre capacity in TiB", default=facts.lustre_tib, type=int)
    return preset, Answers(answers_name, answers_region, tuple(partitions), lustre)
