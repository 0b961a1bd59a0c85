"""The offline SKU catalog: every size the presets and seeds use, with facts and a source for each."""

from __future__ import annotations

import pytest

from hpclz.catalog import load_catalog
from tests.conftest import PRESETS
from tests.rules.cases import preset_doc

REQUIRED = [
    "Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5", "Standard_ND96isr_MI300X_v5", "Standard_ND96asr_v4",
    "Standard_ND96amsr_A100_v4", "Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4", "Standard_NC96ads_A100_v4",
    "Standard_NC40ads_H100_v5", "Standard_NC80adis_H100_v5", "Standard_ND40rs_v2", "Standard_HB120rs_v3",
    "Standard_HB176rs_v4", "Standard_HX176rs", "Standard_HC44rs", "Standard_D4as_v5", "Standard_D8as_v5",
    "Standard_D16as_v5", "Standard_E8as_v5", "Standard_F72s_v2",
]  # fmt: skip


@pytest.mark.parametrize("name", REQUIRED)
def test_catalog_has_each_size_the_seeds_use(name: str) -> None:
    sku = load_catalog().sku(name)
    assert sku is not None
    assert sku.source.startswith("https://learn.microsoft.com/azure/virtual-machines/sizes/")
    assert sku.vcpus > 0 and sku.memory_gib > 0 and sku.quota_family


def test_every_preset_size_is_in_the_catalog() -> None:
    catalog = load_catalog()
    for path in PRESETS:
        compute = preset_doc(path.stem)["compute"]
        sizes = [p["vm_size"] for p in compute["partitions"]] + [compute["scheduler"]["vm_size"]]
        assert [s for s in sizes if catalog.sku(s) is None] == [], path.name


def test_gpu_and_fabric_facts_agree_with_the_series() -> None:
    catalog = load_catalog()
    h100 = catalog.sku("Standard_ND96isr_H100_v5")
    assert h100 is not None and h100.gpu_count == 8 and h100.gpu_memory_gib == 80
    assert h100.infiniband is not None and h100.infiniband.describe() == "8 x 400 Gb/s NDR"
    nc = catalog.sku("Standard_NC96ads_A100_v4")
    assert nc is not None and nc.gpu_count == 4 and not nc.rdma
    hb = catalog.sku("Standard_HB176rs_v4")
    assert hb is not None and not hb.is_gpu and hb.rdma and hb.nvme_disks > 0
    d = catalog.sku("Standard_D8as_v5")
    assert d is not None and not d.is_gpu and not d.rdma and d.nvme_disks == 0


def test_unconfirmed_marks_name_real_fields() -> None:
    for sku in load_catalog().skus.values():
        assert set(sku.unconfirmed) <= set(type(sku).model_fields), sku.name


def test_lustre_facts_follow_the_throughput_table() -> None:
    skus = load_catalog().service("lustre", "skus")
    assert {k: (v["min_tib"], v["increment_tib"]) for k, v in skus.items()} == {
        "AMLFS-Durable-Premium-40": (48, 48),
        "AMLFS-Durable-Premium-125": (16, 16),
        "AMLFS-Durable-Premium-250": (8, 8),
        "AMLFS-Durable-Premium-500": (4, 4),
    }


def test_similar_names_suggest_the_likely_size() -> None:
    assert "Standard_ND96isr_H100_v5" in load_catalog().similar("Standard_ND96isr_H100_v4")
