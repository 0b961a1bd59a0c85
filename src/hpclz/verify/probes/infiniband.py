"""InfiniBand port state and rate from `ibstat` or sysfs (/sys/class/infiniband/<dev>/ports/<n>/)."""

from __future__ import annotations

import re
from pathlib import Path

from hpclz.verify.probes.facts import IbPort


def parse_ibstat(text: str) -> list[IbPort]:
    ports: list[IbPort] = []
    device = ""
    current: dict[str, str] | None = None
    port = 0

    def flush() -> None:
        if current is not None:
            ports.append(
                IbPort(
                    device=device,
                    port=port,
                    state=current.get("State", "").upper(),
                    rate_gbps=_float(current.get("Rate")),
                    link_layer=current.get("Link layer", "InfiniBand"),
                    phys_state=current.get("Physical state", ""),
                )
            )

    for line in text.splitlines():
        ca = re.match(r"^CA '([^']+)'", line)
        if ca:
            flush()
            device, current = ca.group(1), None
            continue
        head = re.match(r"^\s+Port (\d+):\s*$", line)
        if head:
            flush()
            port, current = int(head.group(1)), {}
            continue
        if current is not None and ":" in line:
            key, _, value = line.strip().partition(":")
            current[key.strip()] = value.strip()
    flush()
    return ports


def read_sysfs(root: Path) -> list[IbPort]:
    """Ports under ROOT/sys/class/infiniband; ROOT is / on a live node."""
    ports = []
    for port_dir in sorted((root / "sys/class/infiniband").glob("*/ports/*")):
        state = _read(port_dir / "state")  # "4: ACTIVE"
        rate = _read(port_dir / "rate")  # "400 Gb/sec (4X NDR)"
        ports.append(
            IbPort(
                device=port_dir.parent.parent.name,
                port=int(port_dir.name),
                state=state.split(":", 1)[-1].strip().upper(),
                rate_gbps=_float(rate),
                link_layer=_read(port_dir / "link_layer") or "InfiniBand",
                phys_state=_read(port_dir / "phys_state").split(":", 1)[-1].strip(),
            )
        )
    return ports


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _float(text: str | None) -> float | None:
    m = re.match(r"\s*([\d.]+)", text or "")
    return float(m.group(1)) if m else None


# systemd-networkd logs "<ifname>: lost carrier" each time a link drops (aznhc's test data:
# test/data/1dev_6flap_syslog); aznhc counts them per ib interface over 24 h (azure_ib_link_flapping.nhc). The
# interface is any name aznhc's awk matches, /ib[0-9a-zA-Z_]+/ (lines 22 and 47 @0e0a1ac), not only ib<N>; no
# captured line with another name was found, so the test's ibP257s1 is aznhc's own data renamed.
_LOST_CARRIER = re.compile(r"\b(ib[0-9A-Za-z_]+): [Ll]ost carrier")


def count_lost_carrier(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in _LOST_CARRIER.finditer(text):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts
