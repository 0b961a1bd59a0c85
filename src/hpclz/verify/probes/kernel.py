"""Xid events in the kernel log (`dmesg`, `journalctl -k` or /var/log/kern.log lines all parse).

NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors) lists which codes mean broken hardware; aznhc's
customTests/azure_gpu_xid.nhc greps the same set, and its GHR fault dictionary adds 94 and 95.
"""

from __future__ import annotations

import re

from hpclz.verify.probes.facts import XidEvent

# code -> (meaning, aznhc fault code). Codes outside this table (13, 31, 43: faults of the application) are
# not hardware faults and never fail a node.
FATAL_XIDS: dict[int, tuple[str, str]] = {
    48: ("double-bit ECC error", "NHC2014"),
    56: ("display engine error", "NHC2001"),
    57: ("error programming video memory interface", "NHC2001"),
    58: ("unstable video memory interface", "NHC2001"),
    62: ("internal micro-controller halt", "NHC2001"),
    63: ("row remapping event (ECC page retirement)", "NHC2001"),
    64: ("row remapping failure", "NHC2001"),
    65: ("video processor exception", "NHC2001"),
    68: ("NVDEC0 exception", "NHC2001"),
    69: ("graphics engine class error", "NHC2001"),
    73: ("NVENC2 error", "NHC2001"),
    74: ("NVLink error", "NHC2001"),
    79: ("GPU has fallen off the bus", "NHC2013"),
    80: ("corrupted data sent to GPU", "NHC2001"),
    81: ("VGA subsystem error", "NHC2001"),
    92: ("high single-bit ECC error rate", "NHC2001"),
    94: ("contained ECC error", "NHC2012"),
    95: ("uncontained ECC error", "NHC2011"),
    119: ("GSP RPC timeout", "NHC2001"),
    120: ("GSP error", "NHC2001"),
}

_XID = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\): (?P<code>\d+)")


def scan_xids(log: str) -> list[XidEvent]:
    """Every Xid line, in log order."""
    events = []
    for line in log.splitlines():
        m = _XID.search(line)
        if m:
            events.append(XidEvent(code=int(m.group("code")), pci=m.group("pci"), line=line.strip()))
    return events


def same_device(xid_pci: str, bus_id: str) -> bool:
    """Xid lines name domain:bus:device (no function); nvidia-smi prints 00000000:9B:00.0."""

    def key(text: str) -> tuple[int, ...]:
        parts = re.split(r"[:.]", text)
        numbers = [int(p, 16) for p in parts if p]
        if len(numbers) == 2:  # bus:device, domain 0
            numbers = [0, *numbers]
        return tuple(numbers[:3])

    try:
        return key(xid_pci) == key(bus_id)
    except ValueError:
        return False
