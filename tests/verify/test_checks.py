"""Each planted fault is caught by exactly its check, with a precise message; the good node passes everything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpclz.verify.checks import CHECKS
from hpclz.verify.checks.core import CheckSpec, Verdict
from hpclz.verify.probes.facts import NodeFacts, NvidiaSmi
from hpclz.verify.thresholds import load_thresholds
from tests.verify.helpers import FAULTS, GOOD, H200, REAL_H200, agent, by_id

# fault folder -> (check that must catch it, its status, fragments its message must contain)
FAULT_TABLE: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "gpu-missing": ("HPCLZ-VFY-002", "fail", ("7 of 8 GPUs", "on the PCI bus but not listed: 00000004:00:00.0")),
    "gpu-off-bus": ("HPCLZ-VFY-002", "fail", ("7 of 8 GPUs", "only 7 on the PCI bus")),
    "gpu-memory-low": ("HPCLZ-VFY-003", "fail", ("GPU 3 (00000004:00:00.0)", "81559 MiB < 143000 MiB")),
    "ecc-uncorrectable": ("HPCLZ-VFY-004", "fail", ("GPU 2 (00000003:00:00.0)", "2 uncorrectable ECC errors")),
    "row-remap-pending": ("HPCLZ-VFY-005", "fail", ("GPU 5 (00000006:00:00.0)", "row remap pending")),
    "row-remap-failure": ("HPCLZ-VFY-005", "fail", ("GPU 4 (00000005:00:00.0)", "row remapping FAILED")),
    "xid79": ("HPCLZ-VFY-006", "fail", ("Xid 79", "fallen off the bus", "GPU 2 (00000003:00:00.0)")),
    "nvlink-down": ("HPCLZ-VFY-007", "fail", ("GPU 6 (00000007:00:00.0)", "NVLink 3 inactive", "17/18")),
    "pcie-gen4-x8": ("HPCLZ-VFY-008", "fail", ("GPU 1 (00000002:00:00.0)", "Gen4 x8, expected Gen5 x16")),
    "hw-slowdown-thermal": ("HPCLZ-VFY-009", "fail", ("GPU 7 (00000008:00:00.0)", "hw_thermal_slowdown", "100% busy")),
    "thermal-under-load": (
        "HPCLZ-VFY-009",
        "fail",
        ("GPU 5 (00000006:00:00.0)", "hw_thermal_slowdown", "100% busy, GEMM load"),
    ),
    "persistence-off": ("HPCLZ-VFY-010", "warn", ("GPU 0 (00000001:00:00.0)", "persistence mode is off")),
    "ib-port-down": ("HPCLZ-VFY-011", "fail", ("mlx5_ib3 port 1: DOWN",)),
    "ib-rate-200": ("HPCLZ-VFY-011", "fail", ("mlx5_ib5 port 1: ACTIVE at 200 Gb/s, expected 400",)),
    "nvme-missing": ("HPCLZ-VFY-012", "fail", ("7 of 8 NVMe",)),
    "cpu-cores-48": (
        "HPCLZ-VFY-013",
        "fail",
        ("1 sockets, 48 cores, 48 threads, expected 2 sockets, 96 cores, 96 threads",),
    ),
    "mem-low": ("HPCLZ-VFY-014", "fail", ("954704558 kB vs 1909409116 kB", "-50.0%")),
    "swap-on": ("HPCLZ-VFY-015", "fail", ("SwapTotal 8388604 kB, expected 0",)),
    "gemm-slow": ("HPCLZ-VFY-020", "fail", ("GPU 4 (00000005:00:00.0)", "351.2 TFLOP/s < 712")),
    "hbm-slow": ("HPCLZ-VFY-021", "fail", ("GPU 2 (00000003:00:00.0)", "2.91 TB/s < 3.83")),
    "h2d-slow": ("HPCLZ-VFY-022", "fail", ("GPU 6 (00000007:00:00.0)", "h2d_gbps 24.8 GB/s < 48", "d2h_gbps 25.1")),
    "dcgm-fail": ("HPCLZ-VFY-023", "fail", ("Persistence Mode GPU 0", "currently disabled")),
    "nccl-slow": ("HPCLZ-VFY-030", "fail", ("busbw 152.4 GB/s", "8 ranks", "vs 431 GB/s")),
    "ib-link-flapping": ("HPCLZ-VFY-016", "fail", ("ib6: 6 lost-carrier events in 24 h",)),
    "an-port-down": ("HPCLZ-VFY-017", "fail", ("mlx5_an0 port 1: DOWN at 100 Gb/s, expected ACTIVE at 100",)),
    "ib-loopback-slow": ("HPCLZ-VFY-025", "fail", ("mlx5_ib2 212.3 Gb/s < 360 Gb/s (GPU memory)",)),
    "p2p-slow": ("HPCLZ-VFY-026", "fail", ("GPU 3 -> GPU 7 120.0 GB/s < 335 GB/s (nvbandwidth)",)),
    "pci-gpu-missing": ("HPCLZ-VFY-018", "fail", ("PCI 000a:00:00.0 missing (expected on NUMA node 1)", "ndv5-topo")),
    "pci-hca-wrong-numa": ("HPCLZ-VFY-018", "fail", ("PCI 0105:00:00.0 on NUMA node 0, expected 1",)),
}


def test_the_good_h200_node_passes_every_check() -> None:
    report = agent(GOOD)
    statuses = {c["check_id"]: c["status"] for c in report["checks"]}
    assert statuses.pop("HPCLZ-VFY-023") == "not_measured"  # the captured node has no DCGM
    assert statuses.pop("HPCLZ-VFY-024") == "not_measured"  # aznhc runs STREAM on HB/HX sizes only
    assert statuses.pop("HPCLZ-VFY-031") == "not_measured"  # aznhc runs the IB loopback on ND A100 v4 only
    assert set(statuses.values()) == {"pass"}, statuses
    assert statuses.keys() | {"HPCLZ-VFY-023", "HPCLZ-VFY-024", "HPCLZ-VFY-031"} == {spec.id for spec in CHECKS}
    assert report["sku"] == H200 and report["tier"] == "health+perf+nccl"
    assert "non-fatal Xid 13 ignored" in by_id(report)["HPCLZ-VFY-006"]["message"]


def test_every_fault_fixture_is_in_the_table() -> None:
    tested_elsewhere = {"dcgm-pass", "nvsmi-hung"}  # the passing DCGM case (test_rules) and the hung driver (below)
    assert {p.name for p in FAULTS.iterdir()} - tested_elsewhere == set(FAULT_TABLE)


@pytest.mark.parametrize("fault", sorted(FAULT_TABLE))
def test_a_planted_fault_is_caught_by_its_check_alone(fault: str) -> None:
    check_id, status, fragments = FAULT_TABLE[fault]
    checks = by_id(agent(FAULTS / fault))
    caught = checks.pop(check_id)
    assert caught["status"] == status, caught
    for fragment in fragments:
        assert fragment in caught["message"], (fragment, caught["message"])
    assert caught["fix"], "a failing check says how to fix it"
    others = {cid: c["status"] for cid, c in checks.items() if c["status"] in ("fail", "warn")}
    assert others == {}, f"{fault} also tripped {others}"


def test_failures_carry_measured_threshold_and_nhc_code() -> None:
    checks = by_id(agent(FAULTS / "xid79"))
    assert checks["HPCLZ-VFY-006"]["nhc_code"] == "NHC2013"  # aznhc's code for Xid 79
    count = by_id(agent(FAULTS / "gpu-missing"))["HPCLZ-VFY-002"]
    assert (count["measured"], count["threshold"], count["unit"], count["nhc_code"]) == (7, 8, "GPUs", "NHC2009")
    nccl = by_id(agent(FAULTS / "nccl-slow"))["HPCLZ-VFY-030"]
    assert (nccl["measured"], nccl["threshold"], nccl["nhc_code"]) == (152.4, 431, "NHC2010")


def test_a_hung_driver_fails_liveness_and_leaves_gpu_checks_unmeasured() -> None:
    checks = by_id(agent(FAULTS / "nvsmi-hung"))
    assert checks["HPCLZ-VFY-001"]["status"] == "fail" and "not responding" in checks["HPCLZ-VFY-001"]["message"]
    for gpu_check in ("HPCLZ-VFY-002", "HPCLZ-VFY-004", "HPCLZ-VFY-007", "HPCLZ-VFY-009"):
        assert checks[gpu_check]["status"] == "not_measured"
    assert checks["HPCLZ-VFY-011"]["status"] == "pass"  # readings that do not need the driver still count


def test_threshold_overrides_change_the_verdict() -> None:
    relaxed = by_id(agent(FAULTS / "nccl-slow", overrides={"nccl_allreduce_busbw_gbps": 150}))
    assert relaxed["HPCLZ-VFY-030"]["status"] == "pass" and relaxed["HPCLZ-VFY-030"]["threshold"] == 150
    strict = by_id(agent(GOOD, overrides={"gemm_bf16_tflops": 800}))
    assert strict["HPCLZ-VFY-020"]["status"] == "fail" and "791.1 TFLOP/s < 800" in strict["HPCLZ-VFY-020"]["message"]


def test_an_unknown_sku_measures_what_it_can_and_says_what_it_cannot() -> None:
    checks = by_id(agent(GOOD, sku="Standard_X1_v9"))
    assert checks["HPCLZ-VFY-002"]["message"] == "not measured: no gpu_count threshold for SKU Standard_X1_v9"
    assert checks["HPCLZ-VFY-004"]["status"] == "pass"  # ECC needs no per-SKU figure
    assert checks["HPCLZ-VFY-020"]["status"] == "warn" and "no threshold" in checks["HPCLZ-VFY-020"]["message"]


def test_sku_names_match_imds_and_short_forms() -> None:
    assert load_thresholds("nd96isr_h200_v5").sku == H200
    assert load_thresholds("STANDARD_ND96ISR_H200_V5").get("gpu_count") == 8


def test_clock_brake_on_an_idle_gpu_only_warns() -> None:
    facts = _facts_with(clock_reasons={"gpu_idle", "hw_slowdown"})
    verdict = _spec("HPCLZ-VFY-009").func(facts, load_thresholds(H200))
    assert verdict.status == "warn" and "while idle" in verdict.message


def test_low_pcie_generation_on_an_idle_gpu_warns_but_fewer_lanes_fail() -> None:
    t = load_thresholds(H200)
    idle_gen4 = _spec("HPCLZ-VFY-008").func(_facts_with(pcie_gen=4, clock_reasons={"gpu_idle"}), t)
    busy_gen4 = _spec("HPCLZ-VFY-008").func(_facts_with(pcie_gen=4), t)
    idle_x8 = _spec("HPCLZ-VFY-008").func(_facts_with(pcie_width=8, clock_reasons={"gpu_idle"}), t)
    assert (idle_gen4.status, busy_gen4.status, idle_x8.status) == ("warn", "fail", "fail")


def test_a_crashing_check_is_reported_not_raised() -> None:
    def boom(facts: NodeFacts, t: object) -> Verdict:
        raise KeyError("reading")

    spec = CheckSpec("HPCLZ-VFY-999", "broken", "fix it", "health", boom)
    outcome = spec.run(_facts_with(), load_thresholds(H200))
    assert outcome.status == "fail" and "KeyError" in outcome.message


def _spec(check_id: str) -> CheckSpec:
    return next(s for s in CHECKS if s.id == check_id)


def _facts_with(**gpu_fields: Any) -> NodeFacts:
    from hpclz.verify.probes.facts import Gpu

    fields: dict[str, Any] = {"pcie_gen": 5, "pcie_gen_max": 5, "pcie_width": 16, "pcie_width_max": 16}
    fields.update(gpu_fields)
    gpu = Gpu(index=0, bus_id="00000001:00:00.0", **fields)
    return NodeFacts(node="n", sku=H200, nvsmi=NvidiaSmi(True, gpus=[gpu]))


def test_the_real_single_gpu_capture_passes_the_gpu_checks_end_to_end() -> None:
    # tests/fixtures/gpu/h200 uses the agent's file names: one H200 in a VM without NVLink or InfiniBand.
    one_gpu = {"gpu_count": 1, "nvlink_links_per_gpu": 0, "ib_ports": 0}
    checks = by_id(agent(REAL_H200, sku=H200, overrides=one_gpu, tier="health", with_nccl=False))
    gpu_checks: tuple[str, ...] = ("HPCLZ-VFY-001", "HPCLZ-VFY-002", "HPCLZ-VFY-003", "HPCLZ-VFY-004", "HPCLZ-VFY-005")
    gpu_checks += ("HPCLZ-VFY-008", "HPCLZ-VFY-009", "HPCLZ-VFY-010")
    assert {cid: checks[cid]["status"] for cid in gpu_checks} == dict.fromkeys(gpu_checks, "pass")
    assert checks["HPCLZ-VFY-002"]["message"] == "1 GPU"
    assert checks["HPCLZ-VFY-006"]["status"] == "not_measured"  # no kernel log was captured


def test_a_gpu_size_whose_benchmarks_cannot_run_fails_them(tmp_path: Path) -> None:
    """Not measured is never passed where the node should have been measurable (no torch, no nccl-tests)."""
    (tmp_path / "fixtures.base").write_text(str(GOOD))
    (tmp_path / "perf.json").write_text("")
    (tmp_path / "all_reduce_perf.txt").write_text("")
    checks = by_id(agent(tmp_path))
    for check_id in ("HPCLZ-VFY-020", "HPCLZ-VFY-021", "HPCLZ-VFY-022", "HPCLZ-VFY-030"):
        assert checks[check_id]["status"] == "fail", checks[check_id]
        assert checks[check_id]["message"].startswith("could not measure on a size that requires it: ")
    assert checks["HPCLZ-VFY-023"]["status"] == "not_measured"  # DCGM is optional: aznhc runs none


def test_a_gpu_size_without_nvidia_smi_fails_and_a_cpu_size_does_not(tmp_path: Path) -> None:
    (tmp_path / "fixtures.base").write_text(str(GOOD))
    (tmp_path / "nvidia-smi-q.xml").write_text("")  # empty fixture: the tool is not installed
    (tmp_path / "query-gpu.csv").write_text("")
    on_gpu_size = by_id(agent(tmp_path, tier="health", with_nccl=False))["HPCLZ-VFY-001"]
    assert on_gpu_size["status"] == "fail" and "not installed" in on_gpu_size["message"]
    on_cpu_size = by_id(agent(tmp_path, sku="Standard_HB120rs_v3", tier="health", with_nccl=False))["HPCLZ-VFY-001"]
    assert on_cpu_size["status"] == "not_measured" and "expects no GPU" in on_cpu_size["message"]
