"""Retail prices by region and meter: the shipped snapshot, the refreshed cache, and how API items map to meters.

Azure Retail Prices API items (learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices)
carry serviceName, armRegionName, armSkuName, skuName, meterName, productName, unitOfMeasure, type,
currencyCode, retailPrice and effectiveStartDate. A VM's Linux pay-as-you-go price is the "Consumption" item
with unit "1 Hour" whose productName does not end in "Windows" and whose skuName does not end in "Spot" or
"Low Priority"; the "Spot" item is the spot price. Bastion is serviceName "Azure Bastion", skuName <tier>,
meterName "<tier> Gateway". A NAT gateway's hourly price is serviceName and productName "NAT Gateway" with unit
"1 Hour", priced globally rather than per region (its data-processed meter is per GB). These are the filters
infracost uses for the same API (infracost/infracost internal/resources/azure/linux_virtual_machine.go,
bastion_host.go, internal/providers/terraform/azure/nat_gateway.go).
"""

from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

SNAPSHOT = Path(__file__).resolve().parents[1] / "catalog" / "prices.json"
CACHE_ENV = "HPCLZ_PRICES_DIR"
CURRENCY = "USD"


class Price(BaseModel):
    usd: float = Field(description="Retail price per unit, USD.")
    unit: str = Field(description="The API's unitOfMeasure, e.g. '1 Hour'.")
    effective: str = Field(default="", description="effectiveStartDate of the price.")
    source: str = Field(description="Where the figure comes from: the API query, or the public page quoting it.")


class RegionPrices(BaseModel):
    as_of: str = Field(description="Date the prices were read (YYYY-MM-DD).")
    origin: str = Field(default="snapshot", description="snapshot (shipped with hpclz) or cache (prices refresh).")
    prices: dict[str, Price] = Field(default_factory=dict)


def vm_meter(size: str, *, spot: bool = False) -> str:
    return f"{'vm-spot' if spot else 'vm'}:{size}"


def bastion_meter(tier: str) -> str:
    return f"bastion:{tier}"


NAT_GATEWAY_METER = "nat-gateway"


def meter_of(item: dict[str, Any]) -> str | None:
    """The hpclz meter a Retail Prices API item prices, or None when hpclz does not use it."""
    if item.get("type") != "Consumption" or item.get("currencyCode", CURRENCY) != CURRENCY:
        return None
    service, sku = item.get("serviceName"), str(item.get("skuName") or "")
    if service == "Virtual Machines" and item.get("unitOfMeasure") == "1 Hour":
        if str(item.get("productName", "")).endswith("Windows") or sku.endswith("Low Priority"):
            return None
        if str(item.get("meterName", "")).endswith(("Expired", "Free")) or not item.get("armSkuName"):
            return None
        return vm_meter(str(item["armSkuName"]), spot=sku.endswith(" Spot"))
    hourly = item.get("unitOfMeasure") == "1 Hour"
    if service == "Azure Bastion" and item.get("meterName") == f"{sku} Gateway" and hourly:
        return bastion_meter(sku)
    if service == "NAT Gateway" and item.get("productName") == "NAT Gateway" and hourly:
        return NAT_GATEWAY_METER
    return None


def select(items: list[dict[str, Any]], source: str) -> tuple[dict[str, Price], list[str]]:
    """Meter -> price from API items: the latest effective price wins; two different prices with the same
    date leave the meter unpriced (and noted) rather than picking one."""
    chosen: dict[str, Price] = {}
    clashes: set[str] = set()
    for item in items:
        meter = meter_of(item)
        if meter is None:
            continue
        price = Price(
            usd=float(item["retailPrice"]),
            unit=str(item["unitOfMeasure"]),
            effective=str(item.get("effectiveStartDate", ""))[:10],
            source=source,
        )
        old = chosen.get(meter)
        if old is None or price.effective > old.effective:
            chosen[meter] = price
            clashes.discard(meter)
        elif price.effective == old.effective and price.usd != old.usd:
            clashes.add(meter)
    for meter in clashes:
        del chosen[meter]
    return chosen, [f"{m}: several prices with the same start date; left unpriced" for m in sorted(clashes)]


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hpclz" / "prices"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_region(region: str, cache: Path | None = None) -> RegionPrices | None:
    """The region's prices: the refreshed cache when there is one, else the shipped snapshot, else None."""
    cached = _read((cache or cache_dir()) / f"{region}.json")
    if cached:
        try:
            return RegionPrices.model_validate({**cached, "origin": "cache"})
        except ValueError:
            pass  # a damaged cache file must not hide the snapshot; `prices refresh` rewrites it
    shipped = _read(SNAPSHOT).get("regions", {}).get(region)
    return RegionPrices.model_validate({**shipped, "origin": "snapshot"}) if shipped else None


def write_region(region: str, prices: RegionPrices, cache: Path | None = None) -> Path:
    folder = cache or cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{region}.json"
    body = prices.model_dump(mode="json", exclude={"origin"})
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def today() -> str:
    return date.today().isoformat()
