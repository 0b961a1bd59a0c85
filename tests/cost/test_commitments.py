"""Reservation and savings plan prices from the Retail Prices API, beside pay-as-you-go in the plan's estimate.

The API items below take the documented shape (learn.microsoft.com/rest/api/cost-management/retail-prices/
azure-retail-prices): a Reservation item carries `reservationTerm` and the term's price; a Consumption item read
with api-version=2023-01-01-preview carries `savingsPlan: [{term, retailPrice, unitPrice}]` hourly rates. Their
prices are test values, not Azure's: the recorded eastus2 answer (fixtures/README.md) holds no commitment items.
"""

from __future__ import annotations

import copy
import json
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hpclz.cost.prices import Price, RegionPrices, reserved_meter, savings_meter, select, vm_meter
from tests.conftest import REPO, RunCli
from tests.cost.test_prices import recorded
from tests.support.local_http import serve

AI = str(REPO / "configs" / "ai-training.yaml")
H100 = "Standard_ND96isr_H100_v5"
PATH = "/api/retail/prices"


def _reservation(term: str, price: float, product: str = "Virtual Machines NDsr H100 v5 Series") -> dict[str, Any]:
    linux = next(i for i in recorded() if i["armSkuName"] == H100 and i["skuName"] == "ND96isrH100v5")
    item = {**copy.deepcopy(linux), "type": "Reservation", "reservationTerm": term, "retailPrice": price}
    return {**item, "unitPrice": price, "productName": product}


def commitment_items() -> list[dict[str, Any]]:
    """The recorded answer, its Linux H100 item given savings plan rates, and H100 reservations (test values)."""
    items = recorded()
    for item in items:
        if item["armSkuName"] == H100 and item["skuName"] == "ND96isrH100v5" and "Windows" not in item["productName"]:
            item["savingsPlan"] = [
                {"unitPrice": 50.0, "retailPrice": 50.0, "term": "3 Years"},
                {"unitPrice": 70.0, "retailPrice": 70.0, "term": "1 Year"},
            ]
    return [
        *items,
        _reservation("1 Year", 525600.0),
        _reservation("3 Years", 1051200.0),
        _reservation("1 Year", 1.0, "Virtual Machines NDsr H100 v5 Series Windows"),  # never a Linux price
    ]


def test_select_reads_reservations_and_savings_plans() -> None:
    prices, notes = select(commitment_items(), "test")
    assert notes == []
    assert prices[reserved_meter(H100, 1)].usd == 525600.0 and prices[reserved_meter(H100, 1)].unit == "1 Year"
    assert prices[reserved_meter(H100, 3)].usd == 1051200.0 and prices[reserved_meter(H100, 3)].unit == "3 Years"
    assert (prices[savings_meter(H100, 1)].usd, prices[savings_meter(H100, 3)].usd) == (70.0, 50.0)
    assert prices[vm_meter(H100)].usd == 98.32  # pay-as-you-go unchanged
    committed = {m for m in prices if m.startswith(("vm-ri", "vm-savings"))}  # none from spot or Windows items
    assert committed == {
        reserved_meter(H100, 1),
        reserved_meter(H100, 3),
        savings_meter(H100, 1),
        savings_meter(H100, 3),
    }


class CommitmentApi(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, list[str]]]] = []

    def do_GET(self) -> None:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        type(self).seen.append(query)
        odata = query.get("$filter", [""])[0]
        items = commitment_items() if "Virtual Machines" in odata else []
        data = json.dumps({"BillingCurrency": "USD", "Items": items, "NextPageLink": None}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    CommitmentApi.seen = []
    with serve(CommitmentApi) as base:
        yield base + PATH


def test_plan_shows_commitments_beside_pay_as_you_go(
    run_cli: RunCli, api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HPCLZ_PRICES_DIR", str(tmp_path / "prices"))
    monkeypatch.chdir(tmp_path)
    assert run_cli("prices", "refresh", AI, "--endpoint", api).exit_code == 0
    vm_query = next(q for q in CommitmentApi.seen if "Virtual Machines" in q["$filter"][0])
    assert vm_query["api-version"] == ["2023-01-01-preview"]  # the version that returns savings plan rates
    assert "(priceType eq 'Consumption' or priceType eq 'Reservation')" in vm_query["$filter"][0]
    body = json.loads(run_cli("plan", AI, "-o", "json", "--hours", "100").stdout)["result"]
    line = next(li for li in body["cost_estimate"]["lines"] if "h100" in li["name"] and not li["spot"])
    nodes = line["count"]
    assert line["monthly_usd"] == round(98.32 * nodes * 100, 2)
    assert {(c["kind"], c["years"]): c["monthly_usd"] for c in line["commitments"]} == {
        ("reservation", 1): round(525600.0 / 12 * nodes, 2),  # the term's price over its months, every node
        ("reservation", 3): round(1051200.0 / 36 * nodes, 2),
        ("savings plan", 1): round(70.0 * nodes * 100, 2),  # an hourly rate for the hours the line runs
        ("savings plan", 3): round(50.0 * nodes * 100, 2),
    }
    text = run_cli("plan", AI, "--hours", "100").stdout
    assert f"1-year savings plan ${70.0 * nodes * 100:,.2f}/month (-29%)" in text
    assert "3-year reservation $" in text


def test_no_commitments_without_their_prices() -> None:
    from hpclz.config.loader import load_config
    from hpclz.cost.estimate import estimate

    book = RegionPrices(as_of="2026-11-27", prices={vm_meter(H100): Price(usd=98.32, unit="1 Hour", source="test")})
    est = estimate(load_config(AI).config, book=book)
    assert all(li.commitments == [] for li in est.lines)
