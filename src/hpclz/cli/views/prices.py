"""`hpclz prices refresh` for people: what was read, what is still unpriced, where it was cached."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.services.prices import RefreshResult


def show(out: Console, result: CommandResult[RefreshResult]) -> None:
    body = result.payload
    out.print(f"read {body.items_read} price items for {body.region} from {body.endpoint}", highlight=False)
    for meter, usd in body.meters.items():
        out.print(f"  {meter}: ${usd:,.4f}", highlight=False)
    for meter in body.missing:
        out.print(f"  [yellow]{meter}: no price in the API answer[/]", highlight=False)
    for note in body.notes:
        out.print(f"  [dim]note: {note}[/]", highlight=False)
    out.print(f"[green]✓[/] cached in {body.cache_file}", highlight=False)
