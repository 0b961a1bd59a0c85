"""`hpclz prices refresh`."""

from __future__ import annotations

from pathlib import Path

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded

prices_app = typer.Typer(
    name="prices",
    help="Retail prices for the cost estimate: refresh the local cache from the Azure Retail Prices API.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@prices_app.command()
def refresh(
    config: Path = typer.Argument(
        ..., metavar="CONFIG", help="Landing-zone config (YAML): its region and VM sizes are priced."
    ),
    endpoint: str | None = typer.Option(
        None,
        "--endpoint",
        envvar="HPCLZ_PRICES_ENDPOINT",
        metavar="URL",
        help="Retail Prices API URL (default: prices.azure.com).",
    ),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        metavar="DIR",
        help="Price cache folder (default: $HPCLZ_PRICES_DIR, else ~/.cache/hpclz/prices).",
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Read the region's prices for the config's sizes and services; `hpclz plan` then uses them."""
    with guarded("prices refresh", output):
        from hpclz.cli.views import prices as view
        from hpclz.services.prices import PricesOptions, refresh_prices

        options = PricesOptions(config, endpoint=endpoint, cache_dir=cache_dir)
        finish(refresh_prices(options), output, view.show)
