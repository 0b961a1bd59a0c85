"""Where a size's GPUs and InfiniBand HCAs must sit (Azure's NCCL topology files) and where they do (sysfs).

aznhc's check_hw_topology (Azure/azurehpc-health-checks customTests/azure_hw_topology_check.nhc) reads the
same files and compares each device's NUMA node with `lstopo-no-graphics`; hwloc takes that NUMA node from
/sys/bus/pci/devices/<bus id>/numa_node, which hpclz reads directly (nothing to install on the node).
Fixture: `pci-numa.txt`, what `grep -H . /sys/bus/pci/devices/*/numa_node` prints. Standard library only.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path
from typing import Any

from hpclz.verify.probes.facts import Reading
from hpclz.verify.probes.source import Source

# aznhc picks the file by size: `nd96*_v4` -> ndv4, `nd96isr*_v5` -> ndv5; the MI300X size matches that glob
# but its conf runs no check_hw_topology, so the sizes are listed rather than globbed.
TOPOLOGY_FILES = {
    "standard_nd96asr_v4": "ndv4-topo.xml",
    "standard_nd96amsr_a100_v4": "ndv4-topo.xml",
    "standard_nd96isr_h100_v5": "ndv5-topo.xml",
    "standard_nd96isr_h200_v5": "ndv5-topo.xml",
}
BRIDGE_CLASS = "0x0604"  # PCI-to-PCI bridges: Hyper-V's virtual ones have no sysfs counterpart in the guest
_SYSFS_LINE = re.compile(r"(?:^|/)([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])/numa_node:\s*(-?\d+)\s*$")


def topology_file(sku: str | None) -> str | None:
    if not sku:
        return None
    name = sku.lower()
    return TOPOLOGY_FILES.get(name if name.startswith("standard_") else f"standard_{name}")


def expected_placement(xml_text: str) -> dict[str, int]:
    """Bus id -> NUMA node of every device (not bridge) under each `<cpu numaid>` of an NCCL topology file."""
    placement: dict[str, int] = {}
    for cpu in ET.fromstring(xml_text).iter("cpu"):
        numa = int(cpu.get("numaid", "0"))
        for pci in cpu.iter("pci"):
            busid, kind = pci.get("busid"), pci.get("class", "")
            if busid and not kind.startswith(BRIDGE_CLASS):
                placement[normal_bus_id(busid)] = numa
    return placement


def normal_bus_id(busid: str) -> str:
    """`0001:00:00.0`, `00000001:00:00.0` (nvidia-smi's 8-digit domain) and upper case all read alike."""
    domain, _, rest = busid.strip().lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def parse_numa_nodes(text: str) -> dict[str, int]:
    """`grep -H . /sys/bus/pci/devices/*/numa_node` lines -> {bus id: NUMA node}."""
    found = {}
    for line in text.splitlines():
        m = _SYSFS_LINE.search(line.strip())
        if m:
            found[normal_bus_id(m.group(1))] = int(m.group(2))
    return found


def read_sysfs(root: Path) -> dict[str, int]:
    found = {}
    for node_file in sorted((root / "sys/bus/pci/devices").glob("*/numa_node")):
        try:
            found[normal_bus_id(node_file.parent.name)] = int(node_file.read_text().strip())
        except (OSError, ValueError):
            continue
    return found


def read_topology(source: Source, sku: str | None) -> Reading[dict[str, Any]]:
    """{"file": name, "expected": {bus id: numa}, "actual": {bus id: numa}}, or why there is nothing to compare."""
    name = topology_file(sku)
    if name is None:
        return Reading(None, f"no Azure topology file for SKU {sku or 'unknown'}")
    expected = expected_placement(resources.files("hpclz.verify").joinpath(f"topology/{name}").read_text())
    if source.simulated:
        out = source.file("pci-numa.txt", "")
        if not out.ok or out.text is None:
            return Reading(None, f"pci-numa.txt: {out.why()}")
        actual = parse_numa_nodes(out.text)
    else:
        actual = read_sysfs(source.root() or Path("/"))
    if not actual:
        return Reading(None, "no PCI device in /sys/bus/pci/devices")
    return Reading({"file": name, "expected": expected, "actual": actual})
