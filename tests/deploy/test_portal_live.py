"""Preflight sees the portal VM like the service VMs: its size must be offered in the region and fit the quota."""

from __future__ import annotations

from typing import Any

from hpclz.config.loader import load_config
from hpclz.rules.live.compute import SkuNotOffered
from hpclz.rules.live.context import LiveContext
from tests.conftest import REPO
from tests.support.arm_standin.catalog import default_skus, default_usages

LOCATION = "eastus2"


def _ctx(config: str, **facts: Any) -> LiveContext:
    base: dict[str, Any] = {"skus": default_skus(LOCATION), "usages": default_usages(), **facts}
    return LiveContext(loaded=load_config(REPO / "configs" / config), location=LOCATION, **base)


def test_a_portal_size_the_region_does_not_offer_is_named_at_portal_vm_size() -> None:
    """ai-training's portal is Standard_D4as_v5, which its CycleCloud server also uses (compute.cyclecloud's
    default): with that size gone from the region's SKU list, both are reported, the portal at its own path."""
    assert list(SkuNotOffered().check(_ctx("ai-training.yaml"))) == []
    offered = [s for s in default_skus(LOCATION) if s["name"] != "Standard_D4as_v5"]
    paths = {f.path for f in SkuNotOffered().check(_ctx("ai-training.yaml", skus=offered))}
    assert "portal.vm_size" in paths


def test_a_zone_without_the_portal_does_not_count_it() -> None:
    roles = [path for path, *_ in _ctx("finance.yaml").vm_roles()]
    assert ("portal", "vm_size") not in roles
    assert ("portal", "vm_size") in [path for path, *_ in _ctx("ai-training.yaml").vm_roles()]
