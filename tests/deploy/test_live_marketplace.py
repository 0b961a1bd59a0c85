"""HPCLZ-CMP-109: preflight looks up each pinned marketplace node image in the region (Virtual Machine Images - Get).

Azure's answers: the REST spec's example of a version ScheduledForDeprecation
(tests/fixtures/arm/vmimage_get_specexample.json), and 404 NotFound "Artifact: VMImage was not found." for a version
the region lacks (as Get-AzVMImageSku and Ansible's azure_rm modules print it). Through deploy, the stand-in serves
the route and the adapter reads it with the real azure-mgmt-compute client.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hpclz.azure.arm import Arm
from hpclz.azure.clients import AzureClients
from hpclz.config import load_config
from hpclz.config.loader import LoadedConfig
from hpclz.rules.live import LIVE_RULES
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.marketplace import MarketplaceImageUnavailable
from tests.conftest import REPO
from tests.support.arm_standin import ArmStandIn

SPEC_EXAMPLE = REPO / "tests" / "fixtures" / "arm" / "vmimage_get_specexample.json"
PINNED = "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801"  # the presets' pin (docs/patching.md)


def _energy() -> LoadedConfig:
    return load_config(REPO / "configs" / "energy.yaml")


def _spec_body() -> dict[str, Any]:
    body: dict[str, Any] = json.loads(SPEC_EXAMPLE.read_text(encoding="utf-8"))["responses"]["200"]["body"]
    return body


def _findings(images: dict[str, dict[str, Any] | None]) -> list[Any]:
    ctx = LiveContext(loaded=_energy(), location="southcentralus", marketplace_images=images)
    return list(MarketplaceImageUnavailable().check(ctx))


def test_the_rule_is_registered() -> None:
    assert MarketplaceImageUnavailable in LIVE_RULES


def test_a_version_the_region_lacks_is_an_error_at_every_role_that_pins_it() -> None:
    found = _findings({PINNED: None})
    assert {f.severity.value for f in found} == {"error"}
    assert sorted(f.path for f in found) == [
        "compute.login.image",
        "compute.partitions[gpu].image",
        "compute.partitions[hbv3].image",
        "compute.partitions[hbv4].image",
        "compute.scheduler.image",
    ]
    assert f"{PINNED} is not offered in southcentralus (Azure: NotFound)" in found[0].message


def test_a_version_scheduled_for_deprecation_is_a_warning_with_its_date() -> None:
    found = _findings({PINNED: _spec_body()})
    assert found and {f.severity.value for f in found} == {"warning"}
    assert "is ScheduledForDeprecation (2023-01-13T00:00:00+00:00)" in found[0].message


def test_an_active_version_or_an_unread_one_says_nothing() -> None:
    active = _spec_body()
    active["properties"]["imageDeprecationStatus"] = {"imageState": "Active"}
    assert _findings({PINNED: active}) == []
    assert _findings({}) == []  # never asked, or the read failed: HPCLZ-CMP-104 reports that


def test_the_adapter_reads_a_version_and_a_404_through_the_sdk(arm: ArmStandIn) -> None:
    adapter = Arm(AzureClients(arm.subscription_id))
    body = adapter.marketplace_image("southcentralus", PINNED)
    assert body is not None and body["name"] == "22.04.2026082801"
    # The stand-in's answer has the spec example's shape where the rule reads it.
    assert set(body["properties"]) <= set(_spec_body()["properties"])
    assert body["properties"]["imageDeprecationStatus"]["imageState"] == "Active"
    arm.world.missing_images.add(PINNED.lower())
    assert adapter.marketplace_image("southcentralus", PINNED) is None


def test_deploy_stops_before_any_write_when_the_pinned_version_is_missing(arm: ArmStandIn, zone: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    arm.world.missing_images.add(PINNED.lower())
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 1, result.stdout
    assert "HPCLZ-CMP-109" in result.stdout and PINNED in result.stdout
    assert "nothing was deployed" in result.stdout
    assert [r.path for r in arm.log if r.method == "PUT"] == []
