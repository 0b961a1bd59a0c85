"""The plan always shows the vCPUs each quota family needs against the declared quota, in text and -o json."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpclz.catalog.quota import quota_needs
from hpclz.catalog.skus import load_catalog
from tests.conftest import REPO, CliResult
from tests.plan.support import edited, preset

Run = Callable[..., CliResult]


def test_needs_add_up_per_family_and_spot_draws_on_the_low_priority_quota() -> None:
    catalog = load_catalog()
    config = preset("energy")
    needs = {n.family: n for n in quota_needs(config, catalog)}
    gpu = next(p for p in config.compute.partitions if p.name == "gpu")
    sku = catalog.sku(gpu.vm_size)
    assert sku is not None
    assert needs[sku.quota_family].vcpus == sku.vcpus * gpu.max_nodes
    assert needs[sku.quota_family].declared == config.compute.quotas.get(sku.quota_family)

    def spot(d: dict[str, Any]) -> None:
        next(p for p in d["compute"]["partitions"] if p["name"] == "gpu")["priority"] = "spot"

    spotted = {n.family: n for n in quota_needs(edited(config, spot), catalog)}
    assert sku.quota_family not in spotted
    assert spotted[catalog.spot_quota_family].vcpus == sku.vcpus * gpu.max_nodes


def test_a_short_declared_quota_is_marked() -> None:
    def shrink(d: dict[str, Any]) -> None:
        d["compute"]["quotas"]["standardNDSH100v5Family"] = 96

    need = next(
        n for n in quota_needs(edited(preset("energy"), shrink), load_catalog()) if n.family.startswith("standardNDSH")
    )
    assert need.short and need.declared == 96


def test_plan_shows_quota_declared_or_not(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "energy.yaml"
    shutil.copy(REPO / "configs" / "energy.yaml", path)
    text = run_cli("plan", str(path), "--offline").stdout
    assert "vCPU quota needed (every node running" in text
    assert "standardNDSH100v5Family: 384 vCPUs (gpu 4x96); 384 declared" in text
    assert "no quota declared: check `az vm list-usage -l southcentralus`" in text  # the service VMs' family
    body = json.loads(run_cli("plan", str(path), "--offline", "-o", "json").stdout)["result"]
    h100 = next(q for q in body["quota"] if q["family"] == "standardNDSH100v5Family")
    assert h100 == {
        "family": "standardNDSH100v5Family",
        "vcpus": 384,
        "users": ["gpu 4x96"],
        "declared": 384,
        "limit": None,  # offline: the live limit and use are not read
        "in_use": None,
        "left": None,
        "short": False,
    }
