"""`hpclz plan` that reads Azure (--what-if, or the refresh of a deployed zone) also reads the region's resource
SKUs and the subscription's vCPU usage through the real SDK clients (the ARM stand-in answers): a size the region
does not offer is an error naming the regions the catalog knows to offer it, and each quota family shows its live
limit, use and headroom. A plan that reads nothing from Azure keeps the catalog and the declared quota."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, CliResult
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.catalog import SIZES, sku, usage

Run = Callable[..., CliResult]
MISSING = "Standard_ND96isr_H200_v5"  # ai-training's H200 partition; the catalog knows regions that offer it


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin


@pytest.fixture
def zone(tmp_path: Path) -> Path:
    target = tmp_path / "zone" / "lz.yaml"
    target.parent.mkdir()
    shutil.copy(REPO / "configs" / "ai-training.yaml", target)
    return target


def _sku_reads(arm: ArmStandIn) -> list[Any]:
    return [r for r in arm.log if r.method == "GET" and "/providers/microsoft.compute/skus" in r.path.lower()]


def test_what_if_reads_skus_and_usage_live(arm: ArmStandIn, zone: Path, run_cli: Run) -> None:
    arm.world.skus = [sku(name, "eastus2", family, vcpus) for name, (family, vcpus) in SIZES.items() if name != MISSING]
    arm.world.usages["eastus2"] = [usage("standardNDSH100v5Family", 96, 1000), usage("standardDASv5Family", 8, 40)]
    result = run_cli("plan", str(zone), "--what-if", "-o", "json")
    envelope = json.loads(result.stdout)
    assert result.exit_code == 1, result.stderr
    body = envelope["result"]
    assert body["live_checked"] is True and _sku_reads(arm)
    (missing,) = [f for f in envelope["findings"] if f["rule_id"] == "HPCLZ-CMP-101"]
    assert missing["severity"] == "error" and f"{MISSING} is not offered in eastus2" in missing["message"]
    assert "Regions published captures show offering" in missing["fix"]  # did you mean: from the shipped catalog
    quota = {q["family"]: q for q in body["quota"]}
    h100 = quota["standardNDSH100v5Family"]
    assert (h100["limit"], h100["in_use"], h100["left"]) == (1000, 96, 904)
    assert h100["short"] is (h100["vcpus"] > 904)
    das = quota["standardDASv5Family"]
    assert (das["left"], das["short"]) == (32, das["vcpus"] > 32) and das["short"] is True
    text = run_cli("plan", str(zone), "--what-if")
    assert "vCPU quota needed (every node running; the subscription's live limit and use)" in text.stdout
    assert f"standardDASv5Family: {das['vcpus']} vCPUs" in text.stdout
    assert f"40 limit, 8 in use: short by {das['vcpus'] - 32}" in text.stdout
    assert "1,000 limit, 96 in use: " in text.stdout


def test_a_plan_that_reads_no_azure_reads_no_skus(arm: ArmStandIn, zone: Path, run_cli: Run) -> None:
    for flags in ((), ("--offline",)):  # no state yet: nothing to refresh, so no sign-in either
        result = run_cli("plan", str(zone), "-o", "json", *flags)
        assert result.exit_code == 0, result.stderr
        body = json.loads(result.stdout)["result"]
        assert body["live_checked"] is False
        assert all(q["limit"] is None and q["left"] is None for q in body["quota"])
    assert _sku_reads(arm) == [] and arm.log == []
