"""Probes: read a node's GPUs, kernel log, InfiniBand, NVMe, CPU and memory (standard library only).

Every external command runs under a timeout. With `--fixtures DIR` (or HPCLZ_VERIFY_FIXTURES) the agent
reads captured outputs instead of running anything (lookup rules: hpclz.verify.probes.source). File names:

| fixture file          | stands for                                                    |
|-----------------------|---------------------------------------------------------------|
| nvidia-smi-q.xml      | `nvidia-smi -q -x` (the main GPU reading; also the liveness probe) |
| nvidia-smi-q.xml.rc   | optional: its exit status, or `timeout` for a hung driver     |
| query-gpu.csv         | `nvidia-smi --query-gpu=QUERY_FIELDS --format=csv` (used when the XML is absent or unreadable) |
| query-gpu-load.csv    | the same query, read while every GPU runs GEMMs (perf tier: clock brakes under load) |
| nvlink-status.txt     | `nvidia-smi nvlink -s`                                        |
| lspci-gpus.txt        | `lspci -D -d 10de::0302` (NVIDIA GPUs on the PCI bus; live: sysfs) |
| dmesg.txt             | `dmesg` / `journalctl -k` / kern.log lines (Xid scan)         |
| ibstat.txt            | `ibstat` (else a `sys/class/infiniband/...` tree in the fixture folder) |
| nvme-devices.txt      | `ls /dev/nvme*n1`                                             |
| cpuinfo.txt           | /proc/cpuinfo                                                 |
| meminfo.txt           | /proc/meminfo                                                 |
| pci-numa.txt          | `grep -H . /sys/bus/pci/devices/*/numa_node` (PCI placement; live: sysfs) |
| vm-size.txt           | the IMDS vmSize, e.g. Standard_ND96isr_H200_v5                |
| perf.json             | perf tier readings: {"gemm_bf16_tflops": [per GPU], "hbm_copy_tbps": [...], "h2d_gbps": [...], "d2h_gbps": [...]} |
| nvbandwidth.txt       | `nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce` |
| dcgmi-diag.json       | `dcgmi diag -r 1 --json`                                      |
| all_reduce_perf.txt   | nccl-tests `all_reduce_perf -b 16G -e 16G -g <gpus>` (the SKU's size) |
| carrier-24h.txt       | `journalctl --since -24h -g "lost carrier"` (IB link flapping)  |
| stream.txt            | STREAM (`stream` on PATH)                                     |
| ib_write_bw-<hca>.txt | the client side of an `ib_write_bw` loopback on that HCA      |
| kvp_pool_3            | /var/lib/hyperv/.kvp_pool_3 (binary: the host's physical name, hpclz.verify.probes.kvp) |

A zero-byte file means the tool is missing; a `sys/` folder plays /sys for sysfs readers.
"""

from __future__ import annotations

import contextlib
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from xml.etree.ElementTree import ParseError

from hpclz.verify.probes import host, infiniband, kernel, kvp, nvlink, nvsmi, topology
from hpclz.verify.probes.facts import IbPort, NodeFacts, NvidiaSmi, NvLink, Reading, XidEvent
from hpclz.verify.probes.source import Output, Source

IMDS_VM_SIZE = "http://169.254.169.254/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text"
NVSMI_FACTOR = 1.5  # nvidia-smi -q on 8 GPUs is the slowest healthy probe: give it half as long again


def detect_sku(source: Source) -> str | None:
    """The VM size from a fixture, else from Azure IMDS (2 s timeout: off Azure there is no answer).

    Where CycleCloud's metadata rule is on, only root and CycleCloud's own user get an answer
    (learn.microsoft.com/azure/cyclecloud/cluster-references/configuration-reference, node.prevent_metadata_access);
    a refused request is an OSError, so None. The gate's tiers run as root (slurm.conf(5): HealthCheckProgram and
    Epilog "execute as user root", the Prolog by slurmd, which runs as SlurmdUser, "root" by default; the boot
    tier from the root Scheduled Events watcher), and `hpclz verify` passes the partition's size as --sku."""
    if source.simulated:
        out = source.file("vm-size.txt", "")
        return out.text.strip() if out.ok and out.text else None
    request = urllib.request.Request(IMDS_VM_SIZE, headers={"Metadata": "true"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return str(response.read().decode().strip()) or None
    except OSError:
        return None


def read_nvidia_smi(source: Source) -> NvidiaSmi:
    limit = source.timeout_s * NVSMI_FACTOR
    xml = source.command("nvidia-smi-q.xml", ["nvidia-smi", "-q", "-x"], limit)
    if xml.ok and xml.text:
        try:
            gpus, driver = nvsmi.parse_xml(xml.text)
            return NvidiaSmi(True, gpus=gpus, driver_version=driver, source=xml.origin)
        except ParseError:
            pass
    if xml.error and "timed out" in xml.error:
        return NvidiaSmi(False, error=f"nvidia-smi is not responding: {xml.error}", source=xml.origin)
    csv = source.command("query-gpu.csv", ["nvidia-smi", f"--query-gpu={nvsmi.QUERY_FIELDS}", "--format=csv"], limit)
    if csv.ok and csv.text:
        with contextlib.suppress(ValueError):
            return NvidiaSmi(True, gpus=nvsmi.parse_csv(csv.text), source=csv.origin)
    said = (xml.text or "").strip()
    lost = [bus for bus, _why in nvsmi.lost_gpus(said)]
    if xml.crashed and not lost:
        return NvidiaSmi(False, error=xml.why(), source=xml.origin, rc=xml.rc, crashed=True)
    # Exit status 0 with text that is no reading ("No devices were found") is a failure all the same.
    why = xml.why() if not xml.ok else "exit status 0 but no GPU reading"
    error = f"nvidia-smi failed: {why}" + (f": {' '.join(said.split())[:300]}" if said else "")
    return NvidiaSmi(False, error=error, source=xml.origin, rc=xml.rc, lost=lost)


T = TypeVar("T")


def _reading(out: Output, parse: Callable[[str], T | None]) -> Reading[T]:
    if not out.ok or out.text is None:
        return Reading(None, out.why())
    return Reading(parse(out.text))


def read_xids(source: Source) -> Reading[list[XidEvent]]:
    out = source.command("dmesg.txt", ["dmesg"])
    if not out.ok and not source.simulated:
        out = source.command("dmesg.txt", ["journalctl", "-k", "-b", "--no-pager", "-q"])
    return _reading(out, kernel.scan_xids)


def read_ib(source: Source) -> Reading[list[IbPort]]:
    root = source.root()
    if not source.simulated and root is not None and (root / "sys/class/infiniband").is_dir():
        return Reading(infiniband.read_sysfs(root))
    out = source.command("ibstat.txt", ["ibstat"])
    if not out.ok and source.simulated and root is not None:
        return Reading(infiniband.read_sysfs(root))
    return _reading(out, infiniband.parse_ibstat)


def read_carrier_losses(source: Source) -> Reading[dict[str, int]]:
    """Lost-carrier events per ib interface in the last 24 h (systemd-networkd's journal lines)."""
    argv = ["journalctl", "--since", "-24h", "--no-pager", "-o", "short", "-g", "lost carrier"]
    out = source.command("carrier-24h.txt", argv)
    if out.text is None:
        return Reading(None, out.why())
    # journalctl -g exits 1 when nothing matched: no line, no flap.
    return Reading(infiniband.count_lost_carrier(out.text or ""))


def read_nvme(source: Source) -> Reading[int]:
    if source.simulated:
        return _reading(source.file("nvme-devices.txt", ""), host.count_nvme)
    return Reading(host.count_nvme(host.nvme_listing(source.root() or Path("/"))))


def read_pci_gpus(source: Source) -> Reading[list[str]]:
    if not source.simulated:
        return Reading(host.nvidia_gpus_on_pci(Path("/")))
    return _reading(source.command("lspci-gpus.txt", ["lspci", "-D", "-d", "10de::0302"]), host.parse_lspci)


def read_physical_host(source: Source) -> Reading[str]:
    data = source.binary("kvp_pool_3", kvp.KVP_POOL_3)
    if data is None:
        return Reading(None, f"no Hyper-V KVP pool at {kvp.KVP_POOL_3}")
    name = kvp.physical_host(data)
    return Reading(name) if name else Reading(None, f"no {kvp.PHYSICAL_HOST_NAME} in {kvp.KVP_POOL_3}")


def collect_facts(source: Source, sku: str | None, want_nvlink: bool = True) -> NodeFacts:
    smi = read_nvidia_smi(source)
    root = source.root()
    for gpu in smi.gpus:
        if gpu.pcie_gen is None and root is not None:
            for key, value in host.pcie_link(root, gpu.bus_id).items():
                setattr(gpu, key, value)
    links: Reading[list[NvLink]] = Reading(None, "not read: the SKU has no NVLink")
    if want_nvlink and smi.responsive:
        links = _reading(
            source.command("nvlink-status.txt", ["nvidia-smi", "nvlink", "-s"]), nvlink.parse_nvlink_status
        )
    meminfo = source.file("meminfo.txt", "/proc/meminfo")
    return NodeFacts(
        node=source.node,
        sku=sku,
        nvsmi=smi,
        pci_gpus=read_pci_gpus(source),
        xids=read_xids(source),
        nvlinks=links,
        ib_ports=read_ib(source),
        carrier_losses=read_carrier_losses(source),
        nvme_count=read_nvme(source),
        cpu=_reading(source.file("cpuinfo.txt", "/proc/cpuinfo"), host.parse_cpuinfo),
        mem_total_kb=_reading(meminfo, host.parse_meminfo_kb),
        swap_kb=_reading(meminfo, host.parse_swap_kb),
        topology=topology.read_topology(source, sku),
        physical_host=read_physical_host(source),
        simulated=source.simulated,
    )
