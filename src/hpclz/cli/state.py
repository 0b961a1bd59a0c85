"""`hpclz state show|unlock|forget`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded
from hpclz.errors import ExitCode

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.services.state import StateShowResult

state_app = typer.Typer(
    name="state",
    help="Inspect the recorded state of a landing zone, or release a stale lock.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

CONFIG_ARGUMENT = typer.Argument(..., help="Landing-zone config (YAML); its state: section says where the state is.")


@state_app.command()
def show(config: Path = CONFIG_ARGUMENT, output: OutputFormat = OUTPUT_OPTION) -> None:
    """Show serial, lineage, deployments, resources, outputs and the lock holder."""
    with guarded("state show", output):
        from hpclz.services.state import show_state

        result = show_state(config)
        finish("state show", output, ExitCode.OK, result.payload(), [], lambda out: _print_show(out, result))


@state_app.command()
def unlock(
    config: Path = CONFIG_ARGUMENT,
    force: bool = typer.Option(False, "--force", help="Really break the lock (make sure its run is gone)."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Release a lock left by a run that died; says who held it and since when."""
    with guarded("state unlock", output):
        from hpclz.services.state import unlock_state

        result = unlock_state(config, force=force)

        def human(out: Console) -> None:
            if result.holder is None:
                out.print(f"state {result.location} is not locked; nothing to do")
            else:
                out.print(f"released the lock on {result.location}; it was {result.holder.describe()}")

        finish("state unlock", output, ExitCode.OK, result.payload(), [], human)


@state_app.command()
def forget(
    config: Path = CONFIG_ARGUMENT,
    address: str = typer.Argument(
        ..., help="Full resource ID, or Type/name (e.g. Microsoft.Network/privateEndpoints/pep-x)."
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Remove one resource from state and leave it in Azure: hpclz stops managing (and deleting) it."""
    with guarded("state forget", output):
        from hpclz.services.state import forget_state

        result = forget_state(config, address)

        def human(out: Console) -> None:
            from rich.markup import escape

            for rid in result.forgotten:
                out.print(f"forgot {escape(rid)} (left in Azure); state serial {result.serial}")

        finish("state forget", output, ExitCode.OK, result.payload(), [], human)


def _print_show(out: Console, result: StateShowResult) -> None:
    from rich.markup import escape

    out.print(f"state: {result.location} ({result.backend})")
    out.print(f"lock: {result.lock.describe() if result.lock else 'not locked'}")
    doc = result.state
    if doc is None:
        out.print("no state recorded yet (nothing deployed)")
        return
    updated = doc.updated_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    out.print(f"serial {doc.serial}, lineage {doc.lineage}, updated {updated} by hpclz {doc.hpclz_version}")
    out.print(f"config hash: {doc.config_hash or '-'}; previous versions kept: {len(result.history)}")
    out.print(f"deployments ({len(doc.deployments)}):")
    for d in doc.deployments.values():
        out.print(escape(f"  {d.name}  {d.status.value}  {d.component}  template {d.template_hash[:12]}"))
    out.print(f"resources ({len(doc.resources)}):")
    for r in doc.resources:
        out.print(f"  {escape(r.type)}  {escape(r.name)}  [dim]{escape(r.id)}[/]")
    if doc.outputs:
        out.print("outputs:")
        for key, value in doc.outputs.items():
            out.print(escape(f"  {key} = {value}"))
