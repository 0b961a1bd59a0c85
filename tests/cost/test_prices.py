"""Price selection from Retail Prices API items, the shipped snapshot, and the cache that overrides it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from hpclz.cost.prices import SNAPSHOT, RegionPrices, load_region, meter_of, select, write_region

FIXTURES = Path(__file__).parent / "fixtures"


def recorded() -> list[dict[str, Any]]:
    """The recorded eastus2 API answer (fixtures/README.md)."""
    items: list[dict[str, Any]] = json.loads((FIXTURES / "retail-eastus2-nd-gpu.json").read_text())["Items"]
    return items


def test_the_snapshot_is_exactly_what_the_recorded_answer_prices() -> None:
    shipped = json.loads(SNAPSHOT.read_text(encoding="utf-8"))["regions"]["eastus2"]
    source = next(iter(shipped["prices"].values()))["source"]
    prices, notes = select(recorded(), source)
    assert notes == []
    assert {m: p.model_dump() for m, p in prices.items()} == shipped["prices"]
    assert shipped["as_of"] == "2026-10-07" and "macrogauge" in source


def test_linux_pay_as_you_go_and_spot_are_picked_windows_and_low_priority_are_not() -> None:
    prices, _ = select(recorded(), "test")
    # Linux on-demand and spot items of the recorded answer; the Windows ones cost more (102.736 for H100).
    assert prices["vm:Standard_ND96isr_H100_v5"].usd == 98.32
    assert prices["vm-spot:Standard_ND96isr_H100_v5"].usd == 18.169536
    assert prices["vm:Standard_ND96isr_H200_v5"].usd == 84.8
    windows = [i for i in recorded() if i["productName"].endswith("Windows")]
    low_priority = [i for i in recorded() if i["skuName"].endswith("Low Priority")]
    assert windows and low_priority
    assert all(meter_of(i) is None for i in windows + low_priority)


def test_two_prices_with_one_start_date_leave_the_meter_unpriced() -> None:
    items = recorded()
    twin = copy.deepcopy(next(i for i in items if i["meterId"] == "65502bfb-6a12-54dc-b27e-e15b70039e2a"))
    twin["retailPrice"] = 77.0
    prices, notes = select([*items, twin], "test")
    assert "vm:Standard_ND96isr_H100_v5" not in prices
    assert notes == ["vm:Standard_ND96isr_H100_v5: several prices with the same start date; left unpriced"]


def test_a_later_price_replaces_an_earlier_one() -> None:
    items = recorded()
    newer = copy.deepcopy(next(i for i in items if i["meterId"] == "65502bfb-6a12-54dc-b27e-e15b70039e2a"))
    newer.update(retailPrice=90.0, effectiveStartDate="2026-11-01T00:00:00Z")
    prices, _ = select([newer, *items], "test")
    assert prices["vm:Standard_ND96isr_H100_v5"].usd == 90.0


@pytest.mark.parametrize(
    ("change", "meter"),
    [
        ({"type": "Reservation"}, None),
        ({"currencyCode": "EUR"}, None),
        ({"unitOfMeasure": "1/Month"}, None),
        ({"serviceName": "Azure Bastion", "skuName": "Standard", "meterName": "Standard Gateway"}, "bastion:Standard"),
        ({"serviceName": "NAT Gateway", "productName": "NAT Gateway", "armRegionName": ""}, "nat-gateway"),
        ({"serviceName": "NAT Gateway", "productName": "NAT Gateway", "unitOfMeasure": "1 GB"}, None),
    ],
)
def test_meter_filters(change: dict[str, Any], meter: str | None) -> None:
    item = {**recorded()[3], **change}
    assert meter_of(item) == meter


def test_a_refreshed_cache_wins_and_a_damaged_one_falls_back_to_the_snapshot(tmp_path: Path) -> None:
    assert (snap := load_region("eastus2", tmp_path)) is not None and snap.origin == "snapshot"
    write_region("eastus2", RegionPrices(as_of="2026-11-20", prices={}), tmp_path)
    cached = load_region("eastus2", tmp_path)
    assert cached is not None and cached.origin == "cache" and cached.as_of == "2026-11-20"
    (tmp_path / "eastus2.json").write_text('{"as_of": 3, "prices": "no"}', encoding="utf-8")
    fallback = load_region("eastus2", tmp_path)
    assert fallback is not None and fallback.origin == "snapshot"
    assert load_region("westeurope", tmp_path) is None  # nothing sourced for it: every line unknown offline
