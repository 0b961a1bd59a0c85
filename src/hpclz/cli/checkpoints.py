"""`hpclz checkpoints manifest|verify`."""

from __future__ import annotations

from pathlib import Path

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded

checkpoints_app = typer.Typer(
    name="checkpoints",
    help="Seal checkpoint blobs in a SHA-256 manifest, and prove later that none changed.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

CONFIG_ARGUMENT = typer.Argument(
    ..., metavar="CONFIG", help="Landing-zone config (YAML): its storage.blob names the containers."
)
PREFIX_OPTION = typer.Option(
    "", "--prefix", metavar="FOLDER", help="Only blobs under this folder (e.g. run-42); the manifest sits in it."
)
CONTAINER_OPTION = typer.Option(
    None,
    "--container",
    metavar="NAME",
    help="One container of storage.blob.containers (default: every purpose: checkpoints one).",
)


@checkpoints_app.command()
def manifest(
    config: Path = CONFIG_ARGUMENT,
    prefix: str = PREFIX_OPTION,
    container: str | None = CONTAINER_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Hash every checkpoint blob and write the manifest beside them (signed when manifest_key is set)."""
    with guarded("checkpoints manifest", output):
        from hpclz.cli.views import checkpoints as view
        from hpclz.services.checkpoints import CheckpointsOptions, write_manifest

        finish(
            write_manifest(CheckpointsOptions(config, prefix=prefix, container=container)), output, view.show_manifest
        )


@checkpoints_app.command()
def verify(
    config: Path = CONFIG_ARGUMENT,
    prefix: str = PREFIX_OPTION,
    container: str | None = CONTAINER_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Compare every checkpoint blob's SHA-256 with the manifest: modified, missing and unexpected files exit 1."""
    with guarded("checkpoints verify", output):
        from hpclz.cli.views import checkpoints as view
        from hpclz.services.checkpoints import CheckpointsOptions, verify_checkpoints

        finish(
            verify_checkpoints(CheckpointsOptions(config, prefix=prefix, container=container)), output, view.show_verify
        )
