"""`hpclz prices refresh` against a local server answering in the Retail Prices API's documented shape
(learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices: Items, NextPageLink, Count),
with the recorded eastus2 answer split over two pages."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.conftest import REPO, RunCli
from tests.cost.test_prices import recorded
from tests.support.local_http import serve

AI = str(REPO / "configs" / "ai-training.yaml")
PATH = "/api/retail/prices"


class RetailApi(BaseHTTPRequestHandler):
    """Answers VM queries in two pages (the second reached only through NextPageLink), others with no items."""

    seen: ClassVar[list[dict[str, list[str]]]] = []
    next_host: ClassVar[str | None] = None  # where NextPageLink points; None: this server
    status: ClassVar[int] = 200

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        type(self).seen.append(query)
        if self.status != 200:
            self.send_error(self.status)
            return
        items = recorded()
        odata = query.get("$filter", [""])[0]
        if "Virtual Machines" not in odata:
            body: dict[str, Any] = {"Items": [], "NextPageLink": None, "Count": 0}
        elif "$skip" in query:
            body = {"Items": items[8:], "NextPageLink": None, "Count": len(items) - 8}
        else:
            host = self.next_host or f"http://{self.headers['Host']}"
            follow = f"{host}{PATH}?{urllib.parse.urlencode({'$filter': odata, '$skip': 8})}"
            body = {"Items": items[:8], "NextPageLink": follow, "Count": 8}
        data = json.dumps({"BillingCurrency": "USD", "CustomerEntityId": "Default", **body}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    RetailApi.seen, RetailApi.next_host, RetailApi.status = [], None, 200
    with serve(RetailApi) as base:
        yield base + PATH


def test_refresh_follows_next_page_links_and_caches_the_region(run_cli: RunCli, api: str, tmp_path: Path) -> None:
    result = run_cli("prices", "refresh", AI, "--endpoint", api, "--cache-dir", str(tmp_path), "-o", "json")
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)["result"]
    vm_queries = [q for q in RetailApi.seen if "Virtual Machines" in q["$filter"][0]]
    assert len(vm_queries) == 2 and vm_queries[1]["$skip"] == ["8"]  # page two came from NextPageLink
    odata = vm_queries[0]["$filter"][0]
    assert "armRegionName eq 'eastus2'" in odata and "armSkuName eq 'Standard_ND96isr_H100_v5'" in odata
    assert any(q["$filter"][0].startswith("serviceName eq 'Azure Bastion'") for q in RetailApi.seen)
    assert body["items_read"] == 16
    assert body["meters"]["vm:Standard_ND96isr_H100_v5"] == 98.32
    assert any(
        q["$filter"][0] == "serviceName eq 'NAT Gateway' and productName eq 'NAT Gateway'" for q in RetailApi.seen
    )
    assert {"bastion:Standard", "nat-gateway", "vm:Standard_D8as_v5"} <= set(body["missing"])
    cached = json.loads((tmp_path / "eastus2.json").read_text(encoding="utf-8"))
    assert cached["prices"]["vm-spot:Standard_ND96isr_H100_v5"]["usd"] == 18.169536
    assert cached["as_of"] and api in cached["prices"]["vm:Standard_ND96isr_H100_v5"]["source"]


def test_plan_uses_the_refreshed_cache(
    run_cli: RunCli, api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HPCLZ_PRICES_DIR", str(tmp_path / "prices"))
    monkeypatch.chdir(tmp_path)
    assert run_cli("prices", "refresh", AI, "--endpoint", api).exit_code == 0
    result = run_cli("plan", AI, "-o", "json")
    estimate = json.loads(result.stdout)["result"]["cost_estimate"]
    assert estimate["prices_from"] == "cache"
    h100 = next(li for li in estimate["lines"] if "h100" in li["name"])
    assert h100["unit_usd"] == 98.32 and api in h100["source"]


def test_a_next_page_on_another_host_is_not_followed(run_cli: RunCli, api: str, tmp_path: Path) -> None:
    RetailApi.next_host = "http://attacker.invalid"
    result = run_cli("prices", "refresh", AI, "--endpoint", api, "--cache-dir", str(tmp_path))
    assert result.exit_code == 1 and "refusing to follow it" in result.stderr
    assert not (tmp_path / "eastus2.json").exists()


def test_an_http_error_is_one_line_and_writes_nothing(run_cli: RunCli, api: str, tmp_path: Path) -> None:
    RetailApi.status = 503
    result = run_cli("prices", "refresh", AI, "--endpoint", api, "--cache-dir", str(tmp_path))
    assert result.exit_code == 5 and "answered HTTP 503" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "eastus2.json").exists()


class Endless(BaseHTTPRequestHandler):
    """A server that answers a byte at a time (`drip`), or without end in full chunks."""

    drip: ClassVar[bool] = True

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            self.wfile.write(b'{"Items": [')
            while True:
                self.wfile.write(b" " if self.drip else b" " * 65536)
                self.wfile.flush()
                if self.drip:
                    time.sleep(0.05)
        except OSError:  # the client gave up: the point of the test
            return

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    ("drip", "fragment"), [(True, "did not finish within 1 s"), (False, "more than 1048576 bytes")]
)
def test_a_slow_or_endless_answer_stops_at_the_deadline_or_the_cap(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, drip: bool, fragment: str
) -> None:
    from hpclz.config.loader import load_config
    from hpclz.cost.retail import Limits, refresh
    from hpclz.errors import HpclzError

    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    Endless.drip = drip
    with serve(Endless) as base, pytest.raises(HpclzError, match=fragment) as caught:
        refresh(load_config(AI).config, endpoint=base + PATH, cache=tmp_path, limits=Limits(1.0, 1024 * 1024))
    assert len(str(caught.value).splitlines()) == 1
    assert not (tmp_path / "eastus2.json").exists()


def _plan_estimate(run_cli: RunCli, *args: str) -> dict[str, Any]:
    result = run_cli("plan", AI, "-o", "json", *args)
    assert result.exit_code == 0, result.stderr
    estimate: dict[str, Any] = json.loads(result.stdout)["result"]["cost_estimate"]
    return estimate


def test_plan_reads_prices_itself_when_the_cache_is_missing_then_uses_the_fresh_cache(
    run_cli: RunCli, api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HPCLZ_PRICES_DIR", str(tmp_path / "prices"))
    monkeypatch.chdir(tmp_path)
    first = _plan_estimate(run_cli, "--prices-endpoint", api)
    assert first["prices_from"] == "cache" and first["prices_note"].startswith("read current retail prices from")
    assert RetailApi.seen and (tmp_path / "prices" / "eastus2.json").exists()
    read = len(RetailApi.seen)
    second = _plan_estimate(run_cli, "--prices-endpoint", api)
    assert len(RetailApi.seen) == read  # a cache younger than a week is not read again
    assert second["prices_note"].startswith("price cache read")


def test_a_stale_cache_is_read_again(
    run_cli: RunCli, api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "prices"
    cache.mkdir()
    (cache / "eastus2.json").write_text(json.dumps({"as_of": "2020-01-01", "prices": {}}), encoding="utf-8")
    monkeypatch.setenv("HPCLZ_PRICES_DIR", str(cache))
    monkeypatch.chdir(tmp_path)
    estimate = _plan_estimate(run_cli, "--prices-endpoint", api)
    assert RetailApi.seen and estimate["prices_as_of"] != "2020-01-01"
    h100 = next(li for li in estimate["lines"] if "h100" in li["name"])
    assert h100["unit_usd"] == 98.32 and api in h100["source"]


def test_offline_reads_nothing(run_cli: RunCli, api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCLZ_PRICES_DIR", str(tmp_path / "prices"))
    monkeypatch.chdir(tmp_path)
    estimate = _plan_estimate(run_cli, "--prices-endpoint", api, "--offline")
    assert RetailApi.seen == [] and estimate["prices_from"] == "snapshot"
    assert estimate["prices_note"].startswith("--offline: retail prices not read")
    refused = run_cli("plan", AI, "--offline", "--what-if")
    assert refused.exit_code == 1 and "--offline and --what-if contradict" in refused.stderr


def test_an_unreachable_api_is_said_and_the_snapshot_stands(
    run_cli: RunCli, api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    RetailApi.status = 503
    monkeypatch.setenv("HPCLZ_PRICES_DIR", str(tmp_path / "prices"))
    monkeypatch.chdir(tmp_path)
    estimate = _plan_estimate(run_cli, "--prices-endpoint", api)
    assert estimate["prices_from"] == "snapshot"
    assert estimate["prices_note"].startswith("could not read current retail prices (retail prices: ")
    assert "answered HTTP 503" in estimate["prices_note"]
    text = run_cli("plan", AI, "--prices-endpoint", api).stdout
    assert "could not read current retail prices" in text
