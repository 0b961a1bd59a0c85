"""Each live rule on facts shaped like the Compute and Resources APIs' answers: a passing and a failing case."""

from __future__ import annotations

from typing import Any

import pytest

from hpclz.config.loader import load_config
from hpclz.rules.base import RULE_ID, Rule
from hpclz.rules.live import LIVE_RULES
from hpclz.rules.live.compute import QuotaShort, SkuNotOffered, SkuRestricted
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.subscription import ArmValidationFailed, LiveFactsUnavailable, ProviderNotRegistered
from tests.conftest import REPO
from tests.support.arm_standin.catalog import default_skus, default_usages, sku, usage

LOCATION = "eastus2"


def ctx(**facts: Any) -> LiveContext:
    loaded = load_config(REPO / "configs" / "ai-training.yaml")
    base: dict[str, Any] = {"skus": default_skus(LOCATION), "usages": default_usages()}
    base.update(facts)
    return LiveContext(loaded=loaded, location=LOCATION, **base)


def run(rule: type[Rule[Any]], context: LiveContext) -> list[Any]:
    return list(rule().check(context))


def test_ids_are_well_formed_and_clear_of_the_offline_range() -> None:
    ids = [r.id for r in LIVE_RULES]
    assert len(set(ids)) == len(ids)
    assert all(RULE_ID.match(i) and int(i[-3:]) >= 100 for i in ids)


def test_provider_not_registered_names_the_register_command() -> None:
    assert run(ProviderNotRegistered, ctx()) == []
    [finding] = run(ProviderNotRegistered, ctx(unregistered={"Microsoft.StorageCache": "NotRegistered"}))
    assert finding.fix == "az provider register --namespace Microsoft.StorageCache"
    assert finding.line is not None


def test_arm_validation_failure_is_reported() -> None:
    assert run(ArmValidationFailed, ctx()) == []
    [finding] = run(ArmValidationFailed, ctx(validation_errors={"hpclz-x-network": "InvalidTemplate: bad"}))
    assert "hpclz-x-network: InvalidTemplate: bad" in finding.message


def test_sku_not_offered_points_at_the_partition() -> None:
    assert run(SkuNotOffered, ctx()) == []
    offered = [s for s in default_skus(LOCATION) if s["name"] != "Standard_ND96isr_H200_v5"]
    [finding] = run(SkuNotOffered, ctx(skus=offered))
    assert "Standard_ND96isr_H200_v5 is not offered in eastus2" in finding.message
    assert finding.path.startswith("compute.partitions") and finding.path.endswith("vm_size")


def test_sku_not_offered_names_regions_where_published_captures_show_the_size() -> None:
    # availability.json: the azhpc-toolkit sample output lists Standard_ND96isr_H100_v5 in westeurope and eastus2
    # (tests/fixtures/skus/azhpc-toolkit-how-to.md), the 2026-08-13 `az vm list-skus --all` listing in five more
    # (tests/fixtures/skus/gpu-list-skus-all-2026-08.md); the region Azure just refused is not suggested back.
    offered = [s for s in default_skus(LOCATION) if s["name"] != "Standard_ND96isr_H100_v5"]
    [finding] = run(SkuNotOffered, ctx(skus=offered))
    assert finding.fix == (
        "Regions published captures show offering Standard_ND96isr_H100_v5: canadacentral, italynorth, norwayeast, "
        "swedencentral, uksouth, westeurope; or pick another size."
    )


def test_sku_not_offered_keeps_the_generic_fix_where_no_capture_shows_the_size_elsewhere() -> None:
    # Standard_D8as_v5 (ai-training's scheduler) has a fact only for westus2 (the 2023-07-08 listing): refused there,
    # no capture shows it anywhere else.
    offered = [s for s in default_skus("westus2") if s["name"] != "Standard_D8as_v5"]
    context = ctx(skus=offered)
    context.location = "westus2"
    [finding] = run(SkuNotOffered, context)
    assert finding.fix == SkuNotOffered.fix


def test_sku_not_offered_is_silent_when_the_sku_api_was_unreadable() -> None:
    assert run(SkuNotOffered, ctx(skus=None)) == []


@pytest.mark.parametrize(("kind", "severity"), [("Location", "error"), ("Zone", "warning")])
def test_sku_restriction(kind: str, severity: str) -> None:
    assert run(SkuRestricted, ctx()) == []
    restriction = {
        "type": kind,
        "values": [LOCATION],
        "restrictionInfo": {"locations": [LOCATION], "zones": ["2"] if kind == "Zone" else []},
        "reasonCode": "NotAvailableForSubscription",
    }
    skus = [
        sku(s["name"], LOCATION, s["family"], 96, [restriction]) if s["name"] == "Standard_ND96isr_H100_v5" else s
        for s in default_skus(LOCATION)
    ]
    [finding] = run(SkuRestricted, ctx(skus=skus))
    assert finding.severity.value == severity and "NotAvailableForSubscription" in finding.message


def test_quota_short_compares_full_scale_with_what_is_left() -> None:
    assert run(QuotaShort, ctx()) == []
    usages = [usage("standardNDSH100v5Family", 1000, 4096), *default_usages()[1:]]
    usages = [u for u in usages if u["name"]["value"] != "standardNDSH100v5Family" or u["limit"] == 4096]
    [finding] = run(QuotaShort, ctx(usages=usages))
    assert "standardNDSH100v5Family needs 6144 vCPUs" in finding.message and "3096 left" in finding.message


def test_unavailable_live_api_is_a_warning() -> None:
    assert run(LiveFactsUnavailable, ctx()) == []
    [finding] = run(LiveFactsUnavailable, ctx(unavailable={"Compute usage API": "AuthorizationFailed: no"}))
    assert finding.severity.value == "warning"


def test_spot_partitions_draw_on_the_low_priority_quota() -> None:
    loaded = load_config(REPO / "configs" / "finance.yaml")
    assert any(p.priority == "spot" for p in loaded.config.compute.partitions)
    roomy = LiveContext(loaded=loaded, location=LOCATION, skus=default_skus(LOCATION), usages=default_usages())
    roomy.usages = [*default_usages(), usage("lowPriorityCores", 0, 100000)]
    assert run(QuotaShort, roomy) == []
    tight = LiveContext(
        loaded=loaded,
        location=LOCATION,
        skus=default_skus(LOCATION),
        usages=[*default_usages(), usage("lowPriorityCores", 0, 10)],
    )
    [finding] = run(QuotaShort, tight)
    assert finding.message.startswith("lowPriorityCores needs") and "10 left" in finding.message


def test_regional_total_counts_every_regular_vm() -> None:
    usages = [usage("cores", 0, 100), *default_usages()[1:]]
    findings = run(QuotaShort, ctx(usages=usages))
    assert [f.message.split(" ")[0] for f in findings] == ["cores"]
    assert "100 left" in findings[0].message
