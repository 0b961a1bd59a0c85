"""GPU peer bandwidth (HPCLZ-VFY-026) on real nvbandwidth outputs, PCI topology (HPCLZ-VFY-018) against Azure's
own NCCL topology files, and the IB loopback all-reduce (HPCLZ-VFY-031) on real all_reduce_perf outputs.

Sources: corpus/PROVENANCE.md (nvbandwidth/, nccl/); the topology files are src/hpclz/verify/topology/ (Azure/
azhpc-images topology/, see its README). aznhc's rules are quoted from Azure/azurehpc-health-checks at 0e0a1ac:
customTests/azure_gpu_bandwidth.nhc (P2P fails below the conf's figure, warns below 1.05 x it) and
customTests/azure_hw_topology_check.nhc (expected devices: the self-closing `<pci .../>` lines under each
`numaid`).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from hpclz.verify.checks.core import FAIL, NOT_MEASURED, PASS, WARN
from hpclz.verify.checks.host import pci_topology
from hpclz.verify.checks.perf import nccl_ib_loopback, p2p_bandwidth
from hpclz.verify.nccl import IB_LOOPBACK_ENV, ib_loopback
from hpclz.verify.perf import measure_p2p, parse_nvbandwidth_peers
from hpclz.verify.probes.facts import NodeFacts, NvidiaSmi, NvLink, Reading
from hpclz.verify.probes.source import Source
from hpclz.verify.probes.topology import (
    expected_placement,
    normal_bus_id,
    parse_numa_nodes,
    read_topology,
    topology_file,
)
from hpclz.verify.thresholds import load_thresholds
from tests.verify.helpers import FIXTURES

CORPUS = FIXTURES / "corpus"
H100 = "Standard_ND96isr_H100_v5"
A100_40 = "Standard_ND96asr_v4"


def _facts(p2p: Reading[dict[str, Any]], links: bool = True) -> NodeFacts:
    nvlinks: Reading[list[NvLink]] = (
        Reading([NvLink(0, 0, True)]) if links else Reading(None, "not read: the SKU has no NVLink")
    )
    return NodeFacts(node="n1", sku=H100, nvsmi=NvidiaSmi(True), nvlinks=nvlinks, p2p=p2p)


def _p2p_from(folder: Path, name: str) -> Reading[dict[str, Any]]:
    (folder / "nvbandwidth-p2p.txt").write_text((CORPUS / "nvbandwidth" / name).read_text())
    return measure_p2p(Source(folder, node="n1"), gpus=8)


def test_pcie_peers_of_a_real_run_fail_nd_h100_v5s_nvlink_figure_naming_the_slowest_pair(tmp_path: Path) -> None:
    reading = _p2p_from(tmp_path, "nvbandwidth-50-a6000-read-ce.txt")
    assert reading.value is not None and len(reading.value["pairs"]) == 30  # 6 x 5 pairs; the N/A diagonal is no pair
    verdict = p2p_bandwidth(_facts(reading), load_thresholds(H100))
    assert verdict.status == FAIL and verdict.threshold == 335 and verdict.measured == 21.8
    assert "GPU 0 -> GPU 5 21.8 GB/s" in verdict.message and "< 335 GB/s (nvbandwidth)" in verdict.message


@pytest.mark.parametrize(("figure", "status"), [(20, PASS), (21, WARN), (22, FAIL)])
def test_the_same_real_run_against_overridden_figures_passes_warns_within_5_percent_and_fails(
    tmp_path: Path, figure: float, status: str
) -> None:
    # 21.80 GB/s is the slowest pair: >= 1.05 x 20 passes, within [21, 22.05) warns, below 22 fails (aznhc's bands).
    verdict = p2p_bandwidth(
        _facts(_p2p_from(tmp_path, "nvbandwidth-50-a6000-read-ce.txt")), load_thresholds(H100, {"p2p_gbps": figure})
    )
    assert verdict.status == status, verdict


def test_nvbandwidths_data_check_assert_is_a_failure_not_a_missing_reading(tmp_path: Path) -> None:
    reading = _p2p_from(tmp_path, "nvbandwidth-34-a100-assert.txt")
    assert reading.value is None and "Invalid value when checking the pattern" in reading.why  # its data check
    verdict = p2p_bandwidth(_facts(reading), load_thresholds("Standard_ND96amsr_A100_v4"))
    assert verdict.status == FAIL and "could not measure on a size that requires it" in verdict.message


def test_a_waived_peer_test_says_why() -> None:
    found = parse_nvbandwidth_peers((CORPUS / "nvbandwidth" / "nvbandwidth-13-rtx2080ti-waived.txt").read_text())
    assert found["pairs"] == [] and found["error"] == "Waiving device_to_device_memcpy_write_ce."


def test_without_nvlink_peers_are_not_held_to_the_nvlink_figure(tmp_path: Path) -> None:
    # aznhc adds the P2P test only when `nvidia-smi nvlink --status` prints links (check_nvlink_enabled).
    reading = _p2p_from(tmp_path, "nvbandwidth-50-a6000-read-ce.txt")
    verdict = p2p_bandwidth(_facts(reading, links=False), load_thresholds(H100))
    assert verdict.status == NOT_MEASURED and "no NVLink" in verdict.message


def test_sizes_carry_aznhcs_second_check_gpu_bw_figure() -> None:
    conf = CORPUS / "aznhc" / "conf"
    for sku, name in ((H100, "nd96isr_h100_v5"), ("Standard_ND96isr_H200_v5", "nd96isr_h200_v5"),
                      ("Standard_ND96amsr_A100_v4", "nd96amsr_a100_v4"), (A100_40, "nd96asr_v4")):  # fmt: skip
        [line] = [ln for ln in (conf / f"{name}.conf").read_text().splitlines() if "check_gpu_bw" in ln]
        assert load_thresholds(sku).get("p2p_gbps") == float(line.split()[-1]), sku


def _aznhc_expected(xml_text: str) -> set[tuple[int, str]]:
    """aznhc's load_expected_topology, in Python: grep numaid="N" and self-closing <pci .../> lines, in order."""
    found, numa = set(), 0
    for token in re.findall(r'numaid="\d+"|<pci.+/>', xml_text):
        if token.startswith("numaid"):
            numa = int(token.split('"')[1])
        else:
            found.add((numa, token.split('"')[1]))
    return found


@pytest.mark.parametrize("name", ["ndv4-topo.xml", "ndv5-topo.xml"])
def test_expected_placement_is_the_set_aznhc_reads_from_the_same_file(name: str) -> None:
    text = resources.files("hpclz.verify").joinpath(f"topology/{name}").read_text()
    ours = {(numa, bus) for bus, numa in expected_placement(text).items()}
    assert ours == _aznhc_expected(text) and len(ours) == 16  # 8 GPUs and 8 HCAs


def test_ndv5_puts_four_gpus_and_their_hcas_on_each_socket() -> None:
    text = resources.files("hpclz.verify").joinpath("topology/ndv5-topo.xml").read_text()
    placed = expected_placement(text)
    assert [b for b, n in sorted(placed.items()) if n == 0] == [
        "0001:00:00.0", "0002:00:00.0", "0003:00:00.0", "0008:00:00.0",
        "0101:00:00.0", "0102:00:00.0", "0103:00:00.0", "0104:00:00.0",
    ]  # fmt: skip


def test_sizes_map_to_the_files_aznhc_picks() -> None:
    assert topology_file(H100) == topology_file("nd96isr_h200_v5") == "ndv5-topo.xml"
    assert topology_file(A100_40) == topology_file("Standard_ND96amsr_A100_v4") == "ndv4-topo.xml"
    assert topology_file("Standard_ND96isr_MI300X_v5") is None  # its conf runs no check_hw_topology
    assert normal_bus_id("00000001:00:00.0") == normal_bus_id("0001:00:00.0") == "0001:00:00.0"


def _topology(tmp_path: Path, sku: str, lines: str) -> NodeFacts:
    (tmp_path / "pci-numa.txt").write_text(lines)
    return NodeFacts(
        node="n1", sku=sku, nvsmi=NvidiaSmi(True), topology=read_topology(Source(tmp_path, node="n1"), sku)
    )


def test_an_a100_node_with_a_gpu_on_the_wrong_socket_fails_naming_it(tmp_path: Path) -> None:
    text = resources.files("hpclz.verify").joinpath("topology/ndv4-topo.xml").read_text()
    placed = expected_placement(text) | {"000d:00:00.0": 3}  # ndv4 puts GPU 000d on NUMA node 2
    lines = "".join(f"/sys/bus/pci/devices/{b}/numa_node:{n}\n" for b, n in placed.items())
    verdict = pci_topology(_topology(tmp_path, A100_40, lines), load_thresholds(A100_40))
    assert verdict.status == FAIL and "PCI 000d:00:00.0 on NUMA node 3, expected 2 (ndv4-topo.xml)" in verdict.message
    assert (verdict.measured, verdict.threshold) == (15, 16)


def test_the_sysfs_listing_is_read_as_grep_prints_it() -> None:
    text = "/sys/bus/pci/devices/0001:00:00.0/numa_node:0\n/sys/bus/pci/devices/000a:00:00.0/numa_node:1\nnoise\n"
    assert parse_numa_nodes(text) == {"0001:00:00.0": 0, "000a:00:00.0": 1}


def test_no_topology_file_is_not_measured_and_an_unreadable_bus_fails(tmp_path: Path) -> None:
    mi300x = "Standard_ND96isr_MI300X_v5"
    assert pci_topology(_topology(tmp_path, mi300x, ""), load_thresholds(mi300x)).status == NOT_MEASURED
    assert pci_topology(_topology(tmp_path, H100, "\n"), load_thresholds(H100)).status == FAIL


def _loopback(tmp_path: Path, name: str, sku: str = A100_40) -> NodeFacts:
    (tmp_path / "all_reduce_perf-ib-loopback.txt").write_text((CORPUS / "nccl" / name).read_text())
    t = load_thresholds(sku)
    reading = ib_loopback(Source(tmp_path, node="n1"), 8, t.get("nccl_ib_loopback_busbw_gbps"), 8 << 30)
    return NodeFacts(node="n1", sku=sku, nvsmi=NvidiaSmi(True), nccl_ib_loopback=reading)


def test_ib_loopback_all_reduce_on_real_outputs(tmp_path: Path) -> None:
    t = load_thresholds(A100_40)
    assert t.get("nccl_ib_loopback_busbw_gbps") == 18  # aznhc conf/nd96asr_v4.conf:66
    good = nccl_ib_loopback(_loopback(tmp_path, "superbench-nccl_allreduce.log"), t)
    assert good.status == PASS and "busbw 235.3 GB/s at 8589934592 bytes over 8 ranks" in good.message
    stalled = nccl_ib_loopback(_loopback(tmp_path, "npkit-19-old-error-column.txt"), t)
    assert (
        stalled.status == FAIL and "busbw 0.0 GB/s at 32 bytes" in stalled.message and "vs 18 GB/s" in stalled.message
    )
    assert IB_LOOPBACK_ENV["NCCL_P2P_DISABLE"] == IB_LOOPBACK_ENV["NCCL_SHM_DISABLE"] == "1"


def test_ib_loopback_is_not_measured_where_aznhc_has_no_figure(tmp_path: Path) -> None:
    h200 = "Standard_ND96isr_H200_v5"
    verdict = nccl_ib_loopback(_loopback(tmp_path, "superbench-nccl_allreduce.log", h200), load_thresholds(h200))
    assert verdict.status == NOT_MEASURED
