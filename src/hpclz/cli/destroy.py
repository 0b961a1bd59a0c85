from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, console, finish, guarded

if TYPE_CHECKING:
    from hpclz.state.model import StateDocument


def destroy(
    config: Path = typer.Argument(..., metavar="CONFIG", help="Landing-zone config (YAML)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking for confirmation."),
    include_data: bool = typer.Option(
        False, "--include-data", help="Also delete data-bearing resources (Lustre, NetApp volumes, checkpoint storage)."
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Delete what hpclz created (recorded in state, tagged hpclz-managed), in reverse dependency order.

    The CycleCloud app role assignments deploy made through Microsoft Graph go too; no other."""
    with guarded("destroy", output):
        from hpclz.cli.deploy import ask
        from hpclz.cli.views import destroy as view
        from hpclz.services.destroy import DestroyOptions
        from hpclz.services.destroy import destroy as run_destroy

        err = console(stderr=True)

        def confirm(doc: StateDocument) -> bool:
            view.show_state(err, doc, include_data)
            return ask(f"Destroy the landing zone of {config}?", yes)

        def on_event(outcome: Any) -> None:
            if output is OutputFormat.TEXT:
                view.show_outcome(err, outcome)

        options = DestroyOptions(config=config, include_data=include_data, confirm=confirm, on_event=on_event)
        finish(run_destroy(options), output, view.show)
