"""The per-SKU threshold data file and how config overrides reach it and the node agent."""

from __future__ import annotations

import json

import pytest

from hpclz.verify.agent import _overrides
from hpclz.verify.thresholds import (
    DATA_FILE,
    METRICS,
    agent_arguments,
    known_skus,
    load_thresholds,
    overrides_for,
    required_metrics,
)
from tests.conftest import require
from tests.verify.helpers import REAL_H200


def test_every_threshold_is_a_known_metric_with_a_source() -> None:
    data = json.loads(DATA_FILE.read_text())
    for sku, metrics in [("defaults", data["defaults"]), *data["skus"].items()]:
        for metric, entry in metrics.items():
            assert metric in METRICS, f"{sku}: {metric}"
            assert isinstance(entry["value"], int | float) and entry["value"] >= 0
            assert entry["source"].strip(), f"{sku}: {metric} has no source"


def test_h200_figures_match_aznhc_and_the_baseline() -> None:
    t = load_thresholds("Standard_ND96isr_H200_v5")
    assert (t.get("gpu_count"), t.get("ib_rate_gbps"), t.get("nccl_allreduce_busbw_gbps"), t.get("h2d_gbps")) == (
        8,
        400,
        431,
        48,
    )
    bench = REAL_H200 / "baseline-bench.json"
    require(bench.exists(), "tests/fixtures/gpu/h200/baseline-bench.json")
    baseline = json.loads(bench.read_text())
    # A healthy H200 must pass: every perf threshold sits below what the captured node measured.
    assert t.get("gemm_bf16_tflops") == pytest.approx(0.9 * baseline["gemm_bfloat16_tflops"], rel=0.01)
    assert t.get("hbm_copy_tbps") == pytest.approx(0.9 * baseline["hbm_copy_tbps_rw"], rel=0.01)
    assert "aznhc" in t.source("nccl_allreduce_busbw_gbps")


def test_config_overrides_win_and_are_labelled() -> None:
    t = load_thresholds("Standard_ND96isr_H100_v5", {"nccl_allreduce_busbw_gbps": 450})
    assert t.get("nccl_allreduce_busbw_gbps") == 450 and t.source("nccl_allreduce_busbw_gbps") == "config override"
    assert t.get("gpu_count") == 8


def test_overrides_for_picks_the_sku_case_insensitively_and_refuses_typos() -> None:
    table = {
        "standard_nd96isr_h100_v5": {"nccl_allreduce_busbw_gbps": 450.0},
        "Standard_ND96isr_H200_v5": {"h2d_gbps": 50.0},
    }
    assert overrides_for(table, "Standard_ND96isr_H100_v5") == {"nccl_allreduce_busbw_gbps": 450.0}
    assert overrides_for(table, None) == {}
    with pytest.raises(ValueError, match=r"verify\.thresholds\.X\.busbw: unknown threshold metric"):
        overrides_for({"X": {"busbw": 1.0}}, "x")


def test_agent_arguments_round_trip_through_the_agent_parser() -> None:
    args = agent_arguments({"nccl_allreduce_busbw_gbps": 450.0, "gpu_count": 4})
    assert args == ["--set", "gpu_count=4", "--set", "nccl_allreduce_busbw_gbps=450"]
    assert _overrides(args[1::2]) == {"gpu_count": 4.0, "nccl_allreduce_busbw_gbps": 450.0}


def test_agent_arguments_carry_every_digit() -> None:
    """Ten-digit MemTotal figures and fractional overrides reach the agent exactly, not rounded to 6 digits."""
    overrides = {"mem_total_kb": 1909409116.0, "h2d_gbps": 47.123456789}
    assert _overrides(agent_arguments(overrides)[1::2]) == overrides


def test_known_skus_cover_the_gpu_presets() -> None:
    assert {"Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5"} <= set(known_skus())


def _sizes_verify_judges() -> set[str]:
    """Every preset's partition sizes, and every HPC or GPU size in the catalog."""
    from hpclz.catalog import load_catalog
    from hpclz.config.loader import load_config
    from tests.conftest import PRESETS

    sizes = {p.vm_size for preset in PRESETS for p in load_config(preset).config.compute.partitions}
    catalog = load_catalog()
    sizes |= {name for name, sku in catalog.skus.items() if sku.is_gpu or sku.rdma}
    return sizes


def _missing(size: str) -> list[str]:
    from hpclz.catalog import load_catalog

    sku = load_catalog().sku(size)
    assert sku is not None, f"{size} is not in the catalog"
    t = load_thresholds(size)
    need = required_metrics(
        size,
        gpus=sku.gpu_count,
        ib_ports=sku.infiniband.ports if sku.infiniband else 0,
        nvme=sku.nvme_disks,
        nvidia="NVIDIA" in (sku.gpu_model or ""),
        c2c=sku.architecture == "arm64",
    )
    return ["/".join(sorted(choice)) for choice in need if not any(t.get(m) is not None for m in choice)]


def test_every_preset_and_catalog_hpc_or_gpu_size_has_complete_sourced_thresholds() -> None:
    sizes = _sizes_verify_judges()
    assert {"Standard_HB176rs_v4", "Standard_HX176rs", "Standard_HB120rs_v3", "Standard_F72s_v2"} <= sizes
    missing = {size: gaps for size in sorted(sizes) if (gaps := _missing(size))}
    assert missing == {}


def test_grace_sizes_need_no_pcie_link_but_the_rest_of_a_gpu_node() -> None:
    grace = required_metrics("Standard_ND128isr_GB300_v6", gpus=4, ib_ports=4, nvme=4, c2c=True)
    assert {"pcie_gen"} not in grace and {"h2d_gbps"} in grace and {"nccl_allreduce_busbw_gbps"} in grace
    t = load_thresholds("Standard_ND128isr_GB300_v6")
    assert (t.get("gpu_count"), t.get("internode_allreduce_busbw_gbps")) == (4, 150)
    assert "GHR < 150" in t.source("internode_allreduce_busbw_gbps")


def test_a_size_without_thresholds_is_reported_incomplete() -> None:
    assert _missing("Standard_D8as_v5") == ["cpu_threads", "mem_total_kb"]  # the tolerance has a default
    hbv4 = required_metrics("Standard_HB176rs_v4", gpus=0, ib_ports=1, nvme=2)
    assert {"stream_mbps"} in hbv4 and {"ib_write_bw_gbps", "ib_write_bw_gdr_gbps"} in hbv4
