"""`hpclz prices refresh`: read a region's prices from the Azure Retail Prices API into the local cache.

The API (learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices) is public, needs no
sign-in, takes an OData `$filter`, and answers {"BillingCurrency", "Items": [...], "NextPageLink", "Count"};
a non-empty NextPageLink is the URL of the next page. Pages are followed only on the endpoint's own host.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from hpclz.config.root import LandingZoneConfig
from hpclz.cost.prices import RegionPrices, load_region, select, today, write_region
from hpclz.errors import ExitCode, HpclzError

log = logging.getLogger(__name__)

ENDPOINT = "https://prices.azure.com/api/retail/prices"
# Savings plan rates come only with this version, which is backward compatible with the earlier ones; since it,
# filter values are case-sensitive (the API page, "Preview version" and "Filter values are case sensitive").
API_VERSION = "2023-01-01-preview"
MAX_PAGES = 50  # a filtered query answers in a page or two; more means the filter matched far too much
TIMEOUT_S = 30  # per socket read
# The whole refresh, all pages, and one page's size: a server that answers a byte at a time never trips the per-read
# timeout, and one that answers without end would fill memory. A filtered page is about 100 items (tens of KB).
DEADLINE_S = 120.0
MAX_PAGE_BYTES = 16 * 1024 * 1024
CHUNK = 64 * 1024


@dataclass(frozen=True)
class Limits:
    deadline_s: float = DEADLINE_S
    max_page_bytes: int = MAX_PAGE_BYTES


class _Clock:
    def __init__(self, limits: Limits):
        self.limits = limits
        self.ends = time.monotonic() + limits.deadline_s

    def left(self, url: str) -> float:
        remaining = self.ends - time.monotonic()
        if remaining <= 0:
            raise HpclzError(
                f"retail prices: {_where(url)} did not finish within {self.limits.deadline_s:g} s; nothing was cached",
                exit_code=ExitCode.AZURE_ERROR,
            )
        return remaining


@dataclass
class Refreshed:
    region: str
    cache_file: Path
    queries: list[str]
    items_read: int
    meters: dict[str, float]
    missing: list[str]
    notes: list[str] = field(default_factory=list)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"  # OData string literal: a quote is doubled


def filters(config: LandingZoneConfig) -> list[str]:
    """The OData filters for everything the estimate of `config` can price."""
    region = _quote(config.metadata.location)
    sizes = sorted(
        {size for _, size, _ in config.compute.service_vms()} | {p.vm_size for p in config.compute.partitions}
    )
    any_size = " or ".join(f"armSkuName eq {_quote(s)}" for s in sizes)
    out = [
        f"serviceName eq 'Virtual Machines' and armRegionName eq {region} and "
        f"(priceType eq 'Consumption' or priceType eq 'Reservation') and ({any_size})"
    ]
    if config.network.bastion.enabled:
        out.append(f"serviceName eq 'Azure Bastion' and armRegionName eq {region}")
    if config.network.nat_gateway.enabled:  # one global price, not per region (prices.py)
        out.append("serviceName eq 'NAT Gateway' and productName eq 'NAT Gateway'")
    return out


def wanted(config: LandingZoneConfig) -> list[str]:
    from hpclz.cost.estimate import estimate

    return sorted({li.meter for li in estimate(config).lines if li.meter})


def fetch(endpoint: str, odata_filter: str, clock: _Clock | None = None) -> list[dict[str, Any]]:
    """Every item the filter matches, following NextPageLink, within `clock`'s deadline."""
    clock = clock or _Clock(Limits())
    query = {"api-version": API_VERSION, "$filter": odata_filter}
    url: str | None = f"{endpoint}?{urllib.parse.urlencode(query, quote_via=urllib.parse.quote)}"
    home = urllib.parse.urlsplit(endpoint)[:2]
    items: list[dict[str, Any]] = []
    for _ in range(MAX_PAGES):
        if url is None:
            return items
        if urllib.parse.urlsplit(url)[:2] != home:
            raise HpclzError(f"retail prices: NextPageLink {url} leaves {endpoint}; refusing to follow it")
        page = _get(url, clock)
        items.extend(i for i in page.get("Items") or [] if isinstance(i, dict))
        url = page.get("NextPageLink") or None
    raise HpclzError(f"retail prices: more than {MAX_PAGES} pages for {odata_filter!r}; narrow the query")


def _where(url: str) -> str:
    """The URL without its (long) query, for error lines."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _read(response: Any, url: str, clock: _Clock) -> bytes:
    """The body, a chunk at a time (read1: what one receive brings), checked against the deadline and the cap."""
    data = bytearray()
    while chunk := response.read1(CHUNK):
        data += chunk
        if len(data) > clock.limits.max_page_bytes:
            raise HpclzError(
                f"retail prices: {_where(url)} answered more than {clock.limits.max_page_bytes} bytes for one page; "
                "nothing was cached",
                exit_code=ExitCode.AZURE_ERROR,
            )
        clock.left(url)
    return bytes(data)


def _get(url: str, clock: _Clock) -> dict[str, Any]:
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "hpclz"})
    log.info("GET %s", url)
    try:
        with urllib.request.urlopen(request, timeout=min(TIMEOUT_S, clock.left(url))) as response:
            body = json.loads(_read(response, url, clock).decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise HpclzError(
            f"retail prices: {_where(url)} answered HTTP {exc.code}", exit_code=ExitCode.AZURE_ERROR
        ) from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HpclzError(
            f"retail prices: cannot reach {_where(url)}: {reason}", exit_code=ExitCode.AZURE_ERROR
        ) from None
    except ValueError:
        raise HpclzError(f"retail prices: {_where(url)} did not answer JSON", exit_code=ExitCode.AZURE_ERROR) from None
    if not isinstance(body, dict):
        raise HpclzError(f"retail prices: {_where(url)} answered {type(body).__name__}, not an object")
    return body


def refresh(
    config: LandingZoneConfig, *, endpoint: str = ENDPOINT, cache: Path | None = None, limits: Limits | None = None
) -> Refreshed:
    region = config.metadata.location
    queries = filters(config)
    clock = _Clock(limits or Limits())
    items = [item for q in queries for item in fetch(endpoint, q, clock)]
    source = f"Azure Retail Prices API ({endpoint}), {region}, read {today()}"
    prices, notes = select(items, source)
    path = write_region(region, RegionPrices(as_of=today(), origin="cache", prices=prices), cache)
    need = wanted(config)
    return Refreshed(
        region=region,
        cache_file=path,
        queries=queries,
        items_read=len(items),
        meters={m: p.usd for m, p in sorted(prices.items())},
        missing=[m for m in need if m not in prices],
        notes=notes,
    )


# hpclz's choice: retail list prices change rarely within a week, and a plan run each hour should not read the API
# each time. The snapshot shipped with hpclz is always older than that.
MAX_AGE_DAYS = 7


def _age_days(as_of: str) -> int | None:
    try:
        return (date.today() - date.fromisoformat(as_of)).days
    except ValueError:
        return None


def current_prices(
    config: LandingZoneConfig, *, offline: bool, endpoint: str | None = None, cache: Path | None = None
) -> tuple[RegionPrices | None, str]:
    """The region's prices for `hpclz plan`, and a line saying where they came from. A cache younger than
    MAX_AGE_DAYS is used as is; otherwise, unless `offline`, the public Retail Prices API is read into the cache
    first (no sign-in). When it cannot be read, the cache or the snapshot stands and the line says why."""
    region = config.metadata.location
    book = load_region(region, cache)
    age = _age_days(book.as_of) if book is not None and book.origin == "cache" else None
    log.info("prices for %s: %s", region, f"{book.origin} as of {book.as_of}" if book else "none cached")
    if age is not None and 0 <= age <= MAX_AGE_DAYS:
        return book, f"price cache read {book.as_of if book else ''} ({age} days old)"
    if offline:
        return book, "--offline: retail prices not read; the cache or the shipped snapshot stands"
    url = endpoint or ENDPOINT
    try:
        refresh(config, endpoint=url, cache=cache)
    except HpclzError as exc:
        return book, f"could not read current retail prices ({exc.message}); the cache or the shipped snapshot stands"
    except OSError as exc:  # the cache folder could not be written
        return book, f"could not keep current retail prices ({exc}); the cache or the shipped snapshot stands"
    return load_region(region, cache), f"read current retail prices from {_where(url)}"
