"""The VM shape: /proc/cpuinfo, /proc/meminfo, local NVMe namespaces, and PCIe links from sysfs."""

from __future__ import annotations

import re
from pathlib import Path

from hpclz.verify.probes.facts import CpuInfo


def parse_cpuinfo(text: str) -> CpuInfo:
    """Sockets = distinct physical ids, cores = distinct (socket, core id), threads = processors."""
    sockets: set[str] = set()
    cores: set[tuple[str, str]] = set()
    threads = 0
    model = ""
    for block in re.split(r"\n\s*\n", text.strip()):
        fields = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        if "processor" not in fields:
            continue
        threads += 1
        socket = fields.get("physical id", "0")
        sockets.add(socket)
        cores.add((socket, fields.get("core id", str(threads))))
        model = model or fields.get("model name", "")
    return CpuInfo(sockets=len(sockets), cores=len(cores), threads=threads, model=model)


def parse_meminfo_kb(text: str) -> int | None:
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def parse_swap_kb(text: str) -> int | None:
    m = re.search(r"^SwapTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def count_nvme(listing: str) -> int:
    """Lines of `ls /dev/nvme*n1` (namespace 1 of each controller), as aznhc's check_nvme_count counts."""
    return sum(1 for line in listing.split() if re.search(r"nvme\d+n1$", line.strip()))


def nvme_listing(root: Path) -> str:
    return "\n".join(str(p) for p in sorted((root / "dev").glob("nvme*n1")))


_SPEED_TO_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def pcie_link(root: Path, bus_id: str) -> dict[str, int | None]:
    """Current and maximum PCIe generation and width of one device, from sysfs (lspci needs root for LnkSta)."""
    domain, rest = bus_id.split(":", 1)
    device = root / "sys/bus/pci/devices" / f"{int(domain, 16):04x}:{rest.lower()}"

    def read(name: str) -> str:
        try:
            return (device / name).read_text().strip()
        except OSError:
            return ""

    def gen(text: str) -> int | None:
        m = re.match(r"([\d.]+)\s*GT/s", text)
        return _SPEED_TO_GEN.get(float(m.group(1))) if m else None

    def width(text: str) -> int | None:
        return int(text) if text.isdigit() else None

    return {
        "pcie_gen": gen(read("current_link_speed")),
        "pcie_gen_max": gen(read("max_link_speed")),
        "pcie_width": width(read("current_link_width")),
        "pcie_width_max": width(read("max_link_width")),
    }


def nvidia_gpus_on_pci(root: Path) -> list[str]:
    """Bus ids of NVIDIA 3D controllers (class 0x0302) in sysfs: what the driver should list, even when it doesn't."""
    found = []
    for dev in sorted((root / "sys/bus/pci/devices").glob("*")):
        try:
            vendor = (dev / "vendor").read_text().strip().lower()
            klass = (dev / "class").read_text().strip().lower()
        except OSError:
            continue
        if vendor == "0x10de" and klass.startswith("0x0302"):
            found.append(dev.name)
    return found


def parse_lspci(text: str) -> list[str]:
    """`lspci -D -d 10de::0302`: the first token of each line is the bus id."""
    return [line.split()[0] for line in text.splitlines() if line.strip() and re.match(r"^[0-9a-fA-F:.]+\s", line)]
