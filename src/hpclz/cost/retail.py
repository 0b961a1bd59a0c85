"""`hpclz prices refresh`: read a region's prices from the Azure Retail Prices API into the local cache.

The API (learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices) is public, needs no
sign-in, takes an OData `$filter`, and answers {"BillingCurrency", "Items": [...], "NextPageLink", "Count"};
a non-empty NextPageLink is the URL of the next page. Pages are followed only on the endpoint's own host.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpclz.config.root import LandingZoneConfig
from hpclz.cost.prices import RegionPrices, select, today, write_region
from hpclz.errors import ExitCode, HpclzError

ENDPOINT = "https://prices.azure.com/api/retail/prices"
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
        f"serviceName eq 'Virtual Machines' and armRegionName eq {region} and priceType eq 'Consumption' and ({any_size})"
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
    url: str | None = f"{endpoint}?{urllib.parse.urlencode({'$filter': odata_filter}, quote_via=urllib.parse.quote)}"
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
