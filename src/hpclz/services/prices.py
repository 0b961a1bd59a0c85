"""`hpclz prices refresh`: a config's region and sizes -> the Retail Prices API -> the local price cache."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from hpclz.config.loader import load_config
from hpclz.output import CommandResult, ResultBody


class RefreshResult(ResultBody):
    file: str
    region: str
    endpoint: str
    cache_file: str
    queries: list[str]
    items_read: int
    meters: dict[str, float] = Field(description="meter -> USD per unit, as cached")
    missing: list[str] = Field(description="Meters the estimate needs that the API did not price.")
    notes: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class PricesOptions:
    config: Path
    endpoint: str | None = None  # the Retail Prices API (hpclz.cost.retail.ENDPOINT when None)
    cache_dir: Path | None = None  # the price cache folder (hpclz.cost.retail's default when None)


def refresh_prices(opts: PricesOptions) -> CommandResult[RefreshResult]:
    return CommandResult(command="prices refresh", payload=_refresh(opts.config, opts.endpoint, opts.cache_dir))


def _refresh(path: str | Path, endpoint: str | None, cache_dir: Path | None) -> RefreshResult:
    from hpclz.cost.retail import ENDPOINT, refresh

    loaded = load_config(path)
    url = endpoint or ENDPOINT
    done = refresh(loaded.config, endpoint=url, cache=cache_dir)
    return RefreshResult(
        file=str(path),
        region=done.region,
        endpoint=url,
        cache_file=str(done.cache_file),
        queries=done.queries,
        items_read=done.items_read,
        meters=done.meters,
        missing=done.missing,
        notes=done.notes,
    )
