"""`hpclz state show|unlock|forget`."""

from __future__ import annotations

from pathlib import Path

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded

state_app = typer.Typer(
    name="state",
    help="Inspect the recorded state of a landing zone, or release a stale lock.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

CONFIG_ARGUMENT = typer.Argument(
    ..., metavar="CONFIG", help="Landing-zone config (YAML); its state: section says where the state is."
)


@state_app.command()
def show(config: Path = CONFIG_ARGUMENT, output: OutputFormat = OUTPUT_OPTION) -> None:
    """Show serial, lineage, deployments, resources, outputs and the lock holder."""
    with guarded("state show", output):
        from hpclz.cli.views import state as view
        from hpclz.services.state import StateOptions, show_state

        finish(show_state(StateOptions(config)), output, view.show)


@state_app.command()
def unlock(
    config: Path = CONFIG_ARGUMENT,
    force: bool = typer.Option(False, "--force", help="Really break the lock (make sure its run is gone)."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Release a lock left by a run that died; says who held it and since when."""
    with guarded("state unlock", output):
        from hpclz.cli.views import state as view
        from hpclz.services.state import StateOptions, unlock_state

        finish(unlock_state(StateOptions(config, force=force)), output, view.show_unlock)


@state_app.command()
def forget(
    config: Path = CONFIG_ARGUMENT,
    address: str = typer.Argument(
        ..., metavar="ADDRESS", help="Full resource ID, or Type/name (e.g. Microsoft.Network/privateEndpoints/pep-x)."
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Remove one resource from state and leave it in Azure: hpclz stops managing (and deleting) it."""
    with guarded("state forget", output):
        from hpclz.cli.views import state as view
        from hpclz.services.state import StateOptions, forget_state

        finish(forget_state(StateOptions(config, address=address)), output, view.show_forget)
