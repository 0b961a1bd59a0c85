from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, console, finish, guarded

if TYPE_CHECKING:
    from rich.console import Console

STYLE = {"deleted": "green", "kept": "cyan", "already gone": "dim", "left alone": "yellow", "failed": "bold red"}


def destroy(
    config: Path = typer.Argument(..., metavar="CONFIG", help="Landing-zone config (YAML)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking for confirmation."),
    include_data: bool = typer.Option(
        False, "--include-data", help="Also delete data-bearing resources (Lustre, NetApp volumes, checkpoint storage)."
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Delete what hpclz created (recorded in state, tagged hpclz-managed), in reverse dependency order."""
    with guarded("destroy", output):
        from hpclz.cli.deploy import ask
        from hpclz.services.destroy import destroy as run_destroy

        err = console(stderr=True)

        def confirm(doc: Any) -> bool:
            data = [r for r in doc.resources if r.data_bearing]
            err.print(f"{len(doc.resources)} resources recorded in state, {len(data)} data-bearing:", highlight=False)
            for r in data:
                err.print(f"  {'DELETE' if include_data else 'keep'} {r.type} {r.name}", highlight=False)
            return ask(f"Destroy the landing zone of {config}?", yes)

        def on_event(outcome: Any) -> None:
            if output is OutputFormat.TEXT:
                style = STYLE.get(outcome.action.value, "")
                reason = f" ({outcome.reason})" if outcome.reason else ""
                err.print(f"[{style}]{outcome.action.value}[/] {outcome.type} {outcome.id.rsplit('/', 1)[-1]}{reason}")

        result = run_destroy(config, include_data=include_data, confirm=confirm, on_event=on_event)

        def human(out: Console) -> None:
            if not result.outcomes:
                out.print(f"nothing to destroy: the state of {result.file} lists no resources")
                return
            deleted = sum(1 for o in result.outcomes if o["action"] == "deleted")
            out.print(f"{deleted} deleted, {len(result.kept)} kept, {len(result.failed)} failed")
            for o in result.outcomes:
                if o["action"] == "failed":
                    out.print(f"[red]✗[/] {o['id']}: {o['reason']}")
            if result.kept:
                out.print("Kept (data): rerun with --include-data to delete them too.")

        finish("destroy", output, result.exit_code, result.payload(), [], human)
