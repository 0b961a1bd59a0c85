"""Parsers and checks on what a lent H100 and a second H200 printed on 2026-11-26 (tests/fixtures/gpu/README.md):
the first real H100 `nvidia-smi -q -x` in the corpus, and real nccl-tests 2.19.6 output built against NCCL 2.28.9."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpclz.verify import nccl
from hpclz.verify.probes import nvsmi
from tests.conftest import FIXTURES as REAL_FIXTURES
from tests.verify.helpers import H200, agent, by_id

H100 = "Standard_ND96isr_H100_v5"
LENT = {"h100": (REAL_FIXTURES / "gpu" / "h100", "NVIDIA H100 80GB HBM3", 81559, H100)}
LENT["h200-b"] = (REAL_FIXTURES / "gpu" / "h200-b", "NVIDIA H200", 143771, H200)
ONE_GPU = {"gpu_count": 1, "nvlink_links_per_gpu": 0, "ib_ports": 0}


@pytest.mark.parametrize("card", sorted(LENT))
def test_real_xml_and_csv_agree_on_every_field_a_check_reads(card: str) -> None:
    folder, name, mib, _ = LENT[card]
    (gpu,), driver = nvsmi.parse_xml((folder / "nvidia-smi-q.xml").read_text())
    assert (driver, gpu.name, gpu.memory_total_mib, gpu.bus_id) == ("580.159.04", name, mib, "00000000:00:06.0")
    assert gpu.ecc_enabled is True and gpu.persistence_mode is True
    assert (gpu.remap_pending, gpu.remap_failure, gpu.ecc_volatile_uncorrected) == (False, False, 0)
    assert (gpu.pcie_gen, gpu.pcie_gen_max, gpu.pcie_width, gpu.pcie_width_max) == (5, 5, 16, 16)
    (row,) = nvsmi.parse_csv((folder / "query-gpu.csv").read_text())
    for field in ("bus_id", "memory_total_mib", "persistence_mode", "ecc_enabled", "remap_pending", "pcie_width"):
        assert getattr(row, field) == getattr(gpu, field), field


def test_h100_total_memory_excludes_what_the_driver_reserves() -> None:
    """Driver 580 lists reserved memory beside total (query-gpu.csv: 81559 total, 480 reserved, 81079 free with
    nothing running), and NVML's v2 memory info agrees (503316480 B reserved): a GPU-memory check compares the
    total, which a healthy 80 GB board shows as 81559 MiB, with the SKU's figure, never free + used."""
    folder = LENT["h100"][0]
    header, values = ((cell.strip() for cell in line.split(",")) for line in (folder / "query-gpu.csv").open())
    row = dict(zip(header, values, strict=True))
    assert (row["memory.total [MiB]"], row["memory.reserved [MiB]"], row["memory.free [MiB]"]) == (
        "81559 MiB",
        "480 MiB",
        "81079 MiB",
    )
    assert "reserved: 503316480 B" in (folder / "nvml-readings.txt").read_text()


@pytest.mark.parametrize("card", sorted(LENT))
def test_the_real_single_gpu_node_passes_the_gpu_checks_end_to_end(card: str) -> None:
    folder, _, _, sku = LENT[card]
    checks = by_id(agent(folder, sku=sku, overrides=ONE_GPU, tier="health", with_nccl=False))
    gpu_checks = ("HPCLZ-VFY-001", "HPCLZ-VFY-002", "HPCLZ-VFY-003", "HPCLZ-VFY-004", "HPCLZ-VFY-005")
    assert {cid: checks[cid]["status"] for cid in gpu_checks} == dict.fromkeys(gpu_checks, "pass")


def test_the_same_node_fails_nvlink_against_the_real_size() -> None:
    """A lent H100 is one GPU without NVLink; an ND H100 v5 GPU has 18 links, so the size's own figures fail it."""
    checks = by_id(agent(LENT["h100"][0], sku=H100, tier="health", with_nccl=False))
    assert checks["HPCLZ-VFY-002"]["status"] == "fail"
    assert checks["HPCLZ-VFY-007"]["status"] == "fail" and "expected 18" in checks["HPCLZ-VFY-007"]["message"]


@pytest.mark.parametrize("card", sorted(LENT))
def test_real_nccl_tests_output_parses_with_its_wrong_column(card: str) -> None:
    text = (LENT[card][0] / "all_reduce_perf.txt").read_text()
    assert text.startswith("# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809")
    parsed = nccl.parse_all_reduce_perf(text)
    assert [p["size_bytes"] for p in parsed["points"]] == [8 * 4**k for k in range(14)]  # -b 8 -e 1G -f 4
    assert (parsed["ranks"], parsed["wrong"], parsed["out_of_bounds"], parsed["avg_busbw_gbps"]) == (1, 0, 0, 0.0)
    assert {p["busbw_gbps"] for p in parsed["points"]} == {0.0}  # one rank: 2(n-1)/n = 0


def _one_gpu_run(tmp_path: Path, card: str, output: str) -> Path:
    folder = tmp_path / card
    folder.mkdir()
    (folder / "fixtures.base").write_text(str(LENT[card][0]))
    (folder / "all_reduce_perf.txt").write_text(output)
    return folder


def test_one_rank_all_reduce_is_not_measured_on_a_one_gpu_size_and_fails_on_eight(tmp_path: Path) -> None:
    real = (LENT["h100"][0] / "all_reduce_perf.txt").read_text()
    folder = _one_gpu_run(tmp_path, "h100", real)
    one = by_id(agent(folder, sku=H100, overrides=ONE_GPU, tier="health"))["HPCLZ-VFY-030"]
    assert one["status"] == "not_measured" and "one GPU" in one["message"], one
    eight = by_id(agent(folder, sku=H100, tier="health"))["HPCLZ-VFY-030"]
    assert eight["status"] == "fail" and "over 1 ranks" in eight["message"] and "vs 460 GB/s" in eight["message"]


def test_a_wrong_element_in_the_real_one_gpu_output_fails_even_where_bandwidth_is_not_judged(tmp_path: Path) -> None:
    # The last row's out-of-place #wrong cell set to 3, as nccl-tests prints a count ("%6g", src/util.cu).
    real = (LENT["h100"][0] / "all_reduce_perf.txt").read_text()
    row = "   536870912     134217728     float     sum      -1   359.43  1493.7    0.00       0"
    assert row in real
    folder = _one_gpu_run(tmp_path, "h100", real.replace(row, row[:-1] + "3"))
    check = by_id(agent(folder, sku=H100, overrides=ONE_GPU, tier="health"))["HPCLZ-VFY-030"]
    assert check["status"] == "fail" and "3 wrong elements" in check["message"], check
