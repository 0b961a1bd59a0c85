"""`hpclz prices refresh`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded
from hpclz.errors import ExitCode

if TYPE_CHECKING:
    from rich.console import Console

prices_app = typer.Typer(
    name="prices",
    help="Retail prices for the cost estimate: refresh the local cache from the Azure Retail Prices API.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@prices_app.command()
def refresh(
    config: Path = typer.Argument(..., help="Landing-zone config (YAML): its region and VM sizes are priced."),
    endpoint: str | None = typer.Option(
        None, "--endpoint", envvar="HPCLZ_PRICES_ENDPOINT", help="Retail Prices API URL (default: prices.azure.com)."
    ),
    cache_dir: Path | None = typer.Option(
        None, "--cache-dir", help="Price cache folder (default: $HPCLZ_PRICES_DIR, else ~/.cache/hpclz/prices)."
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Read the region's prices for the config's sizes and services; `hpclz plan` then uses them."""
    with guarded("prices refresh", output):
        from hpclz.services.prices import refresh_prices

        result = refresh_prices(config, endpoint=endpoint, cache_dir=cache_dir)

        def human(out: Console) -> None:
            out.print(f"read {result.items_read} price items for {result.region} from {result.endpoint}")
            for meter, usd in result.meters.items():
                out.print(f"  {meter}: ${usd:,.4f}", highlight=False)
            for meter in result.missing:
                out.print(f"  [yellow]{meter}: no price in the API answer[/]", highlight=False)
            for note in result.notes:
                out.print(f"  [dim]note: {note}[/]", highlight=False)
            out.print(f"[green]✓[/] cached in {result.cache_file}")

        finish("prices refresh", output, ExitCode.OK, result.payload(), [], human)
