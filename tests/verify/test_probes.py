"""Parsers against the real H200 capture and each tool's documented format; fixture lookup rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpclz.verify.probes import host, infiniband, kernel, nvlink, nvsmi
from hpclz.verify.probes.source import Source
from tests.verify.helpers import GOOD, REAL_H200


def test_real_h200_xml_parses_every_field_a_check_reads() -> None:
    gpus, driver = nvsmi.parse_xml((REAL_H200 / "nvidia-smi-q.xml").read_text())
    assert driver == "580.159.04"
    (gpu,) = gpus
    assert (gpu.index, gpu.bus_id, gpu.name, gpu.memory_total_mib) == (0, "00000000:00:06.0", "NVIDIA H200", 143771)
    assert gpu.persistence_mode is True and gpu.ecc_enabled is True
    assert (gpu.ecc_volatile_uncorrected, gpu.ecc_sram_corrected, gpu.ecc_dram_corrected) == (0, 0, 0)
    assert (gpu.remap_pending, gpu.remap_failure) == (False, False)
    assert (gpu.pcie_gen, gpu.pcie_gen_max, gpu.pcie_width, gpu.pcie_width_max) == (5, 5, 16, 16)
    assert gpu.clock_reasons == {"gpu_idle"}
    assert gpu.utilization_pct == 0


def test_real_h200_query_csv_matches_the_xml() -> None:
    (row,) = nvsmi.parse_csv((REAL_H200 / "query-gpu.csv").read_text())
    (xml,) = nvsmi.parse_xml((REAL_H200 / "nvidia-smi-q.xml").read_text())[0]
    for field in ("bus_id", "memory_total_mib", "persistence_mode", "ecc_enabled", "remap_pending", "pcie_gen"):
        assert getattr(row, field) == getattr(xml, field), field
    assert row.clock_reasons == {"gpu_idle"}  # 0x0000000000000001
    assert row.ecc_aggregate_uncorrected is None  # a column the capture lacks stays unknown, never 0


def test_not_available_values_are_unknown_not_zero() -> None:
    assert nvsmi.integer("[N/A]") is None and nvsmi.integer("N/A") is None and nvsmi.integer("[Not Supported]") is None
    assert nvsmi.integer("143771 MiB") == 143771 and nvsmi.integer("16x") == 16


def test_clock_reason_mask_uses_nvml_bits() -> None:
    assert nvsmi.clock_reasons_from_mask("0x0000000000000048") == {"hw_slowdown", "hw_thermal_slowdown"}
    assert nvsmi.clock_reasons_from_mask("0x0000000000000080") == {"hw_power_brake_slowdown"}
    assert nvsmi.clock_reasons_from_mask("[N/A]") == set()


def test_bus_ids_normalise_to_nvidia_smi_form() -> None:
    assert nvsmi.normalize_bus_id("0001:00:00.0") == "00000001:00:00.0"
    assert nvsmi.normalize_bus_id("00000000:9b:00.0") == "00000000:9B:00.0"


def test_xid_scan_finds_code_and_device_and_maps_to_bus_id() -> None:
    log = (
        "[ 12.0] NVRM: loading NVIDIA UNIX Open Kernel Module\n"
        "[ 99.1] NVRM: Xid (PCI:0003:00:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
        "Nov 26 01:00:00 node kernel: NVRM: Xid (PCI:0000:9b:00): 48, pid=1, DBE (0x1,0x0)\n"
    )
    events = kernel.scan_xids(log)
    assert [(e.code, e.pci) for e in events] == [(79, "0003:00:00"), (48, "0000:9b:00")]
    assert kernel.same_device("0003:00:00", "00000003:00:00.0")
    assert kernel.same_device("0000:9b:00", "00000000:9B:00.0")
    assert not kernel.same_device("0003:00:00", "00000004:00:00.0")
    assert {13, 31, 43}.isdisjoint(kernel.FATAL_XIDS) and {48, 63, 64, 74, 79, 92, 94, 95} <= set(kernel.FATAL_XIDS)


def test_nvlink_status_marks_inactive_links() -> None:
    text = "GPU 0: NVIDIA H200 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\nGPU 1: NVIDIA H200 (UUID: GPU-2)\n\t Link 0: 26.562 GB/s\n"
    links = nvlink.parse_nvlink_status(text)
    assert [(x.gpu_index, x.link, x.active) for x in links] == [(0, 0, True), (0, 1, False), (1, 0, True)]
    assert links[0].speed_gbps == 26.562


def test_ibstat_and_sysfs_give_the_same_ports(tmp_path: Path) -> None:
    ports = infiniband.parse_ibstat((GOOD / "ibstat.txt").read_text())
    ib = [p for p in ports if p.link_layer == "InfiniBand"]
    assert len(ib) == 8 and all(p.active and p.rate_gbps == 400 for p in ib)
    assert [p.device for p in ports if p.link_layer == "Ethernet"] == ["mlx5_an0"]
    port = tmp_path / "sys/class/infiniband/mlx5_ib0/ports/1"
    port.mkdir(parents=True)
    (port / "state").write_text("1: DOWN\n")
    (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
    (port / "phys_state").write_text("3: Disabled\n")
    (port / "link_layer").write_text("InfiniBand\n")
    (read,) = infiniband.read_sysfs(tmp_path)
    assert (read.device, read.port, read.state, read.rate_gbps, read.phys_state) == (
        "mlx5_ib0",
        1,
        "DOWN",
        400,
        "Disabled",
    )


def test_host_shape_readers() -> None:
    cpu = host.parse_cpuinfo((GOOD / "cpuinfo.txt").read_text())
    assert (cpu.sockets, cpu.cores, cpu.threads) == (2, 96, 96)
    this_machine = host.parse_cpuinfo(Path("/proc/cpuinfo").read_text())
    assert this_machine.threads >= 1 and this_machine.cores >= 1
    assert host.parse_meminfo_kb("MemTotal:       1909409116 kB\nMemFree: 1 kB\n") == 1909409116
    assert host.count_nvme("/dev/nvme0n1\n/dev/nvme1n1\n/dev/nvme1n2\n") == 2


def test_pcie_link_from_sysfs(tmp_path: Path) -> None:
    dev = tmp_path / "sys/bus/pci/devices/0001:00:00.0"
    dev.mkdir(parents=True)
    for name, value in {
        "current_link_speed": "16.0 GT/s PCIe",
        "max_link_speed": "32.0 GT/s PCIe",
        "current_link_width": "8",
        "max_link_width": "16",
    }.items():
        (dev / name).write_text(value + "\n")
    assert host.pcie_link(tmp_path, "00000001:00:00.0") == {
        "pcie_gen": 4,
        "pcie_gen_max": 5,
        "pcie_width": 8,
        "pcie_width_max": 16,
    }


def test_fixture_lookup_node_folder_then_root_then_base(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "dmesg.txt").write_text("from base\n")
    (base / "ibstat.txt").write_text("base ibstat\n")
    tree = tmp_path / "tree"
    (tree / "n1").mkdir(parents=True)
    (tree / "fixtures.base").write_text("../base\n")
    (tree / "ibstat.txt").write_text("root ibstat\n")
    (tree / "n1" / "ibstat.txt").write_text("n1 ibstat\n")
    (tree / "n1" / "nvme-devices.txt").write_text("")  # zero bytes: the tool is missing
    n1, n2 = Source(tree, node="n1"), Source(tree, node="n2")
    assert n1.command("ibstat.txt", ["ibstat"]).text == "n1 ibstat\n"
    assert n2.command("ibstat.txt", ["ibstat"]).text == "root ibstat\n"
    assert n1.command("dmesg.txt", ["dmesg"]).text == "from base\n"
    missing = n1.file("nvme-devices.txt", "")
    assert missing.missing and not missing.ok
    (tree / "n1" / "ibstat.txt.rc").write_text("timeout\n")
    assert "timed out" in (n1.command("ibstat.txt", ["ibstat"]).error or "")


def test_a_missing_fixture_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Source(tmp_path / "nope")


def test_live_commands_run_under_a_timeout() -> None:
    live = Source(None, node="here", timeout_s=0.5)
    slow = live.command("x", ["sleep", "5"])
    assert slow.text is None and "timed out after 0.5 s" in (slow.error or "")
    assert live.command("x", ["no-such-tool-hpclz"]).missing
    echo = live.command("x", ["echo", "hi"])
    assert echo.ok and echo.text == "hi\n"


def test_nvidia_gpus_on_the_pci_bus_from_sysfs_and_lspci(tmp_path: Path) -> None:
    for name, vendor, klass in (
        ("0001:00:00.0", "0x10de", "0x030200"),  # H200
        ("0002:00:00.0", "0x10de", "0x068000"),  # NVSwitch: a bridge, not a GPU
        ("0101:00:00.0", "0x15b3", "0x020700"),  # ConnectX-7
    ):
        dev = tmp_path / "sys/bus/pci/devices" / name
        dev.mkdir(parents=True)
        (dev / "vendor").write_text(vendor + "\n")
        (dev / "class").write_text(klass + "\n")
    assert host.nvidia_gpus_on_pci(tmp_path) == ["0001:00:00.0"]
    listing = "0001:00:00.0 3D controller: NVIDIA Corporation GH100 [H200 SXM 141GB] (rev a1)\n"
    assert host.parse_lspci(listing) == ["0001:00:00.0"]
