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

Commitments, from the same API: a VM's reservation is an item of type "Reservation" with `reservationTerm`
"1 Year" or "3 Years", whose retailPrice is the price of the whole term although its unitOfMeasure reads
"1 Hour" (a published API answer for Standard_M8ms in eastus: 7740.0 for "1 Year", 11297.0 for "3 Years", in the
AzureRetailPricesApi client's README sample). A savings plan's hourly rates ride on the pay-as-you-go item as
`savingsPlan: [{"term": "1 Year", "retailPrice": ..., "unitPrice": ...}, ...]`, returned only by
api-version=2023-01-01-preview ("Rates for savings plans are only available with" that version, the API page).
hpclz keeps a reservation as its term's price (unit "1 Year" / "3 Years") and a savings plan as its hourly rate.
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
TERMS = {"1 Year": 1, "3 Years": 3}


def reserved_meter(size: str, years: int) -> str:
    return f"vm-ri{years}y:{size}"


def savings_meter(size: str, years: int) -> str:
    return f"vm-savings{years}y:{size}"


def _linux_vm(item: dict[str, Any]) -> bool:
    """A Linux VM's own meter: not Windows, not low priority, not expired or free, named by its ARM size."""
    if item.get("serviceName") != "Virtual Machines" or item.get("currencyCode", CURRENCY) != CURRENCY:
        return False
    if str(item.get("productName", "")).endswith("Windows") or str(item.get("skuName", "")).endswith("Low Priority"):
        return False
    return bool(item.get("armSkuName")) and not str(item.get("meterName", "")).endswith(("Expired", "Free"))


def commitments(item: dict[str, Any]) -> list[tuple[str, float, str]]:
    """(meter, USD, unit) of the reservation or savings plan prices an API item carries (see the module docstring)."""
    if not _linux_vm(item) or str(item.get("skuName", "")).endswith(" Spot"):
        return []
    size = str(item["armSkuName"])
    if item.get("type") == "Reservation":
        term = str(item.get("reservationTerm", ""))
        return [(reserved_meter(size, TERMS[term]), float(item["retailPrice"]), term)] if term in TERMS else []
    if item.get("type") != "Consumption" or item.get("unitOfMeasure") != "1 Hour":
        return []
    out = []
    for plan in item.get("savingsPlan") or []:
        term, rate = str(plan.get("term", "")), plan.get("retailPrice", plan.get("unitPrice"))
        if term in TERMS and isinstance(rate, int | float):
            out.append((savings_meter(size, TERMS[term]), float(rate), "1 Hour"))
    return out


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
        found = [] if meter is None else [(meter, float(item["retailPrice"]), str(item["unitOfMeasure"]))]
        for meter, usd, unit in [*found, *commitments(item)]:
            price = Price(usd=usd, unit=unit, effective=str(item.get("effectiveStartDate", ""))[:10], source=source)
            _keep(chosen, clashes, meter, price)
    for meter in clashes:
        del chosen[meter]
    return chosen, [f"{m}: several prices with the same start date; left unpriced" for m in sorted(clashes)]


def _keep(chosen: dict[str, Price], clashes: set[str], meter: str, price: Price) -> None:
    old = chosen.get(meter)
    if old is None or price.effective > old.effective:
        chosen[meter] = price
        clashes.discard(meter)
    elif price.effective == old.effective and price.usd != old.usd:
        clashes.add(meter)


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
