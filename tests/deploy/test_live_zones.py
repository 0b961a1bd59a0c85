"""The live zone check (HPCLZ-CMP-108) on the Resource Skus - List example of the REST spec, and through deploy's
preflight against the stand-in: a zone Azure does not offer the size in stops deploy before any write."""

from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from hpclz.config.loader import load_config_text
from hpclz.rules.live import LIVE_RULES
from hpclz.rules.live.compute import ZoneNotOfferedLive
from hpclz.rules.live.context import LiveContext
from tests.conftest import REPO
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.catalog import default_skus, sku

SPEC_EXAMPLE = REPO / "tests" / "fixtures" / "arm" / "skus_list_specexample.json"


def _config(partition_size: str, zone: int | None, location: str = "westus", service_zone: int | None = None) -> Any:
    doc = YAML(typ="safe").load((REPO / "configs" / "manufacturing.yaml").read_text(encoding="utf-8"))
    doc["metadata"]["location"] = location
    doc["compute"]["partitions"] = [{**doc["compute"]["partitions"][0], "vm_size": partition_size}]
    if zone is not None:
        doc["compute"]["partitions"][0]["zone"] = zone
    if service_zone is not None:
        doc["compute"]["service_zone"] = service_zone
    doc["organization"].pop("policies", None)
    out = StringIO()
    YAML(typ="safe").dump(doc, out)
    return load_config_text(out.getvalue(), "zones.yaml")


def _spec_skus() -> list[dict[str, Any]]:
    value: list[dict[str, Any]] = json.loads(SPEC_EXAMPLE.read_text(encoding="utf-8"))["value"]
    return value


def test_the_live_zone_rule_is_registered() -> None:
    assert ZoneNotOfferedLive in LIVE_RULES


@pytest.mark.parametrize("zone", [1, 2])
def test_a_zone_the_spec_example_lists_passes(zone: int) -> None:
    ctx = LiveContext(loaded=_config("Standard_A0", zone), location="westus", skus=_spec_skus())
    assert list(ZoneNotOfferedLive().check(ctx)) == []


def test_a_zone_the_spec_example_leaves_out_is_an_error_at_the_partition() -> None:
    # The example lists Standard_A0 in westus zones "2" and "1" only.
    ctx = LiveContext(loaded=_config("Standard_A0", 3), location="westus", skus=_spec_skus())
    [finding] = ZoneNotOfferedLive().check(ctx)
    assert finding.severity.value == "error"
    assert finding.path == "compute.partitions[cfd].zone"
    assert "Standard_A0 is offered to this subscription in zones 1, 2 of westus, not zone 3" in finding.message


def test_a_zone_restricted_for_the_subscription_is_an_error() -> None:
    # A Zone-type restriction, shaped as the spec's ResourceSkuRestrictions (restrictionInfo.zones).
    restricted = sku(
        "Standard_HB176rs_v4",
        "westeurope",
        "standardHBv4Family",
        176,
        [
            {
                "type": "Zone",
                "values": ["westeurope"],
                "restrictionInfo": {"locations": ["westeurope"], "zones": ["1"]},
                "reasonCode": "NotAvailableForSubscription",
            }
        ],
    )
    ctx = LiveContext(loaded=_config("Standard_HB176rs_v4", 1, "westeurope"), location="westeurope", skus=[restricted])
    [finding] = ZoneNotOfferedLive().check(ctx)
    assert "in zones 2, 3 of westeurope, not zone 1" in finding.message


def test_service_vms_are_checked_once_per_size_and_unknown_sizes_are_left_to_cmp_101() -> None:
    skus = [s for s in default_skus("westeurope") if s["name"] != "Standard_D8as_v5"]
    skus = [
        {**s, "locationInfo": [{"location": "westeurope", "zones": ["2", "3"]}]}
        if s["name"] == "Standard_D4as_v5"
        else s
        for s in skus
    ]
    ctx = LiveContext(
        loaded=_config("Standard_HB176rs_v4", None, "westeurope", service_zone=1), location="westeurope", skus=skus
    )
    [finding] = ZoneNotOfferedLive().check(ctx)
    assert finding.path == "compute.service_zone" and "Standard_D4as_v5" in finding.message


def test_nothing_is_said_when_the_sku_api_was_unreadable() -> None:
    ctx = LiveContext(loaded=_config("Standard_A0", 3), location="westus", skus=None)
    assert list(ZoneNotOfferedLive().check(ctx)) == []


@pytest.fixture
def zone(tmp_path: Path) -> Path:
    target = tmp_path / "zone" / "lz.yaml"
    target.parent.mkdir()
    shutil.copy(REPO / "configs" / "ai-training.yaml", target)
    return target


def test_deploy_stops_before_any_write_when_the_sku_api_leaves_the_zone_out(
    arm: ArmStandIn, zone: Path, run_cli
) -> None:  # type: ignore[no-untyped-def]
    # ai-training puts its H200 partition in zone 1; this subscription is offered the size in zones 2 and 3.
    arm.world.skus = [
        {**s, "locationInfo": [{"location": "eastus2", "zones": ["2", "3"]}]}
        if s["name"] == "Standard_ND96isr_H200_v5"
        else s
        for s in default_skus("eastus2")
    ]
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 1, result.stdout
    assert "HPCLZ-CMP-108" in result.stdout and "Standard_ND96isr_H200_v5" in result.stdout
    assert "nothing was deployed" in result.stdout
    assert [r.path for r in arm.log if r.method == "PUT"] == []
