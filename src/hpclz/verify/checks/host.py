"""Node shape checks: InfiniBand ports, NVMe, CPU, memory (LBNL NHC check_hw_* and aznhc equivalents)."""

from __future__ import annotations

from typing import Any

from hpclz.verify.checks.core import FAIL, NOT_MEASURED, PASS, CheckSpec, Verdict, check, no_threshold, num
from hpclz.verify.probes.facts import CpuInfo, IbPort, NodeFacts
from hpclz.verify.thresholds import Thresholds


@check(
    "HPCLZ-VFY-011",
    "InfiniBand port state and rate",
    "A port DOWN or at a lower rate breaks or slows multi-node NCCL: reboot; if it persists, report the node (NHC2004).",
    nhc_code="NHC2004",
)
def ib_ports(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Every InfiniBand port is ACTIVE at the SKU's rate (NHC check_hw_ib 400 per HCA on ND H100/H200 v5).
    Ethernet ports of the same driver (mlx5_an0, accelerated networking) are not counted."""
    expected, rate = t.get("ib_ports"), t.get("ib_rate_gbps")
    if not expected:
        return no_threshold(t, "ib_ports")
    if facts.ib_ports.value is None:
        return Verdict(FAIL, f"no InfiniBand reading: {facts.ib_ports.why}", 0, num(expected), "ports", "NHC2002")
    ports: list[IbPort] = [p for p in facts.ib_ports.value if p.link_layer.lower() == "infiniband"]  # type: ignore[attr-defined]
    problems = []
    for p in ports:
        if not p.active:
            problems.append(f"{p.device} port {p.port}: {p.state or 'unknown state'} ({p.phys_state or '?'})")
        elif rate and (p.rate_gbps or 0) < rate:
            problems.append(f"{p.device} port {p.port}: ACTIVE at {num(p.rate_gbps or 0)} Gb/s, expected {num(rate)}")
    good = sum(1 for p in ports if p.active and (not rate or (p.rate_gbps or 0) >= rate))
    if len(ports) < expected:
        problems.append(f"{len(ports)} of {num(expected)} InfiniBand ports present")
    if problems:
        code = "NHC2002" if len(ports) < expected else "NHC2004"
        return Verdict(FAIL, "; ".join(problems), good, num(expected), "ports", code)
    return Verdict(PASS, f"{good} ports ACTIVE at {num(rate or 0)} Gb/s", good, num(expected), "ports")


@check(
    "HPCLZ-VFY-012",
    "Local NVMe disk count",
    "A missing NVMe namespace shrinks scratch (RAID0 fails to assemble): reboot, else report the node (NHC2023).",
    nhc_code="NHC2023",
)
def nvme_count(facts: NodeFacts, t: Thresholds) -> Verdict:
    """The VM size's local NVMe namespaces are all present (aznhc check_nvme_count: counts /dev/nvme*n1)."""
    expected = t.get("nvme_count")
    if expected is None:
        return no_threshold(t, "nvme_count")
    if facts.nvme_count.value is None:
        return Verdict(NOT_MEASURED, f"not measured: {facts.nvme_count.why}")
    found = int(facts.nvme_count.value)  # type: ignore[call-overload]
    if found != expected:
        return Verdict(FAIL, f"{found} of {num(expected)} NVMe disks", found, num(expected), "disks")
    return Verdict(PASS, f"{found} NVMe disks", found, num(expected), "disks")


@check(
    "HPCLZ-VFY-013",
    "CPU sockets and cores",
    "Fewer cores than the VM size has means a wrong size or a host fault: redeploy the VM.",
)
def cpu_shape(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Sockets, physical cores and hardware threads from /proc/cpuinfo, each where the size states it (NHC
    check_hw_cpuinfo S C T: 2 96 96 on ND v4/v5; an Azure size page states only vCPUs, the threads)."""
    wanted = {k: t.get(f"cpu_{k}") for k in ("sockets", "cores", "threads")}
    if all(v is None for v in wanted.values()):
        return no_threshold(t, "cpu_cores")
    if facts.cpu.value is None:
        return Verdict(NOT_MEASURED, f"not measured: {facts.cpu.why}")
    cpu: CpuInfo = facts.cpu.value  # type: ignore[assignment]
    seen = {"sockets": cpu.sockets, "cores": cpu.cores, "threads": cpu.threads}
    shown = ", ".join(f"{seen[k]} {k}" for k, v in wanted.items() if v is not None)
    unit = "cores" if wanted["cores"] is not None else "threads"
    goal = num(wanted[unit] or 0)
    if any(v is not None and seen[k] != v for k, v in wanted.items()):
        want = ", ".join(f"{num(v)} {k}" for k, v in wanted.items() if v is not None)
        return Verdict(FAIL, f"{shown}, expected {want}", seen[unit], goal, unit)
    return Verdict(PASS, shown, seen[unit], goal, unit)


@check(
    "HPCLZ-VFY-014",
    "Host memory size",
    "Missing memory means a DIMM or host fault: redeploy the VM, or report it to Azure.",
)
def memory(facts: NodeFacts, t: Thresholds) -> Verdict:
    """MemTotal within the tolerance of the VM size's memory (NHC check_hw_physmem, aznhc: ±3 % on ND H200 v5)."""
    expected = t.get("mem_total_kb")
    if expected is None:
        return no_threshold(t, "mem_total_kb")
    if facts.mem_total_kb.value is None:
        return Verdict(NOT_MEASURED, f"not measured: {facts.mem_total_kb.why}")
    found = int(facts.mem_total_kb.value)  # type: ignore[call-overload]
    tolerance = (t.get("mem_tolerance_pct") or 0) / 100
    off = (found - expected) / expected
    shown = f"MemTotal {found} kB vs {num(expected)} kB ({off:+.1%}, allowed ±{tolerance:.0%})"
    status = FAIL if abs(off) > tolerance else PASS
    return Verdict(status, shown, found, num(expected), "kB")


@check(
    "HPCLZ-VFY-015",
    "Swap is off",
    "Disable swap on GPU nodes (swapoff -a and remove it from /etc/fstab or the image): paging stalls every rank of a job.",
)
def swap_off(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Swap configured on a node fails, as aznhc's check_hw_swap 0kB 0kB 3% in every conf does (the 3 % is of the
    swap found, so any swap is out of range; NHC scripts/lbnl_hw.nhc:213-240): one rank paging stalls the whole
    collective, so HPC images run without swap."""
    if facts.swap_kb.value is None:
        return Verdict(NOT_MEASURED, f"not measured: {facts.swap_kb.why}")
    swap = int(facts.swap_kb.value)  # type: ignore[call-overload]
    if swap:
        return Verdict(FAIL, f"SwapTotal {swap} kB, expected 0", swap, 0, "kB")
    return Verdict(PASS, "no swap", 0, 0, "kB")


# aznhc azure_ib_link_flapping.nhc: 5 or more lost-carrier events on one ib interface within 24 h (its defaults).
FLAPS_LIMIT = 5


@check(
    "HPCLZ-VFY-016",
    "InfiniBand link flapping",
    "A link that keeps dropping needs its cable or HCA looked at: drain the node and report it to Azure with the "
    "journal lines (aznhc NHC2005).",
    nhc_code="NHC2005",
)
def ib_flapping(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Lost-carrier events per ib interface in the last 24 h, from systemd-networkd's journal lines (aznhc
    check_ib_link_flapping: 5 or more on one interface fail). A flapping link passes ibstat between drops."""
    if not t.get("ib_ports"):
        return no_threshold(t, "ib_ports")
    if facts.carrier_losses.value is None:
        return Verdict(NOT_MEASURED, f"not measured: {facts.carrier_losses.why}")
    counts: dict[str, int] = facts.carrier_losses.value  # type: ignore[assignment]
    worst = max(counts.values(), default=0)
    flapping = [f"{dev}: {n} lost-carrier events in 24 h" for dev, n in sorted(counts.items()) if n >= FLAPS_LIMIT]
    if flapping:
        return Verdict(FAIL, "; ".join(flapping), worst, FLAPS_LIMIT - 1, "events")
    return Verdict(PASS, f"at most {worst} lost-carrier events per link in 24 h", worst, FLAPS_LIMIT - 1, "events")


@check(
    "HPCLZ-VFY-017",
    "Accelerated networking port (mlx5_an0)",
    "The VM's accelerated-networking NIC is down or slow: restart it (or the VM); report it if it stays so.",
)
def accelerated_networking(facts: NodeFacts, t: Thresholds) -> Verdict:
    """The Ethernet port of the VM's accelerated networking (mlx5_an0) is ACTIVE at the size's rate: aznhc checks
    `check_hw_ib 100 mlx5_an0:1` in its ND H200 v5 confs. It carries storage and the job's TCP traffic."""
    rate = t.get("an_rate_gbps")
    if rate is None:
        return no_threshold(t, "an_rate_gbps")
    if facts.ib_ports.value is None:
        return Verdict(FAIL, f"no port reading: {facts.ib_ports.why}", None, num(rate), "Gb/s")
    ports: list[IbPort] = [p for p in facts.ib_ports.value if p.device.startswith("mlx5_an")]  # type: ignore[attr-defined]
    if not ports:
        return Verdict(
            FAIL, "no mlx5_an port: accelerated networking is off or its driver is missing", 0, num(rate), "Gb/s"
        )
    bad = [f"{p.device} port {p.port}: {p.state or '?'} at {num(p.rate_gbps or 0)} Gb/s" for p in ports
           if not p.active or (p.rate_gbps or 0) < rate]  # fmt: skip
    best = max(p.rate_gbps or 0 for p in ports)
    if bad:
        return Verdict(FAIL, "; ".join(bad) + f", expected ACTIVE at {num(rate)}", best, num(rate), "Gb/s")
    return Verdict(PASS, f"{ports[0].device} ACTIVE at {num(best)} Gb/s", best, num(rate), "Gb/s")


@check(
    "HPCLZ-VFY-018",
    "PCI topology: GPUs and InfiniBand HCAs on their NUMA nodes",
    "A GPU or HCA missing from the PCI bus or on the wrong NUMA node breaks NCCL's GPUDirect pairing: deallocate "
    "and redeploy the VM (new host), and report it if it persists (aznhc NHC2010).",
    nhc_code="NHC2010",
)
def pci_topology(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Every GPU and InfiniBand HCA in Azure's NCCL topology file for the size (Azure/azhpc-images topology/,
    the files aznhc's check_hw_topology reads) is on the PCI bus, on the NUMA node the file names; the node's
    placement is read from /sys/bus/pci/devices/*/numa_node, where lstopo (aznhc's reader) gets it."""
    reading = facts.topology
    if reading.value is None:
        if reading.why.startswith("no Azure topology file"):
            return Verdict(NOT_MEASURED, f"not measured: {reading.why}")
        return Verdict(FAIL, f"could not read PCI placement: {reading.why}")
    found: dict[str, Any] = reading.value  # type: ignore[assignment]
    expected: dict[str, int] = found["expected"]
    actual: dict[str, int] = found["actual"]
    problems = []
    for busid, numa in sorted(expected.items()):
        if busid not in actual:
            problems.append(f"PCI {busid} missing (expected on NUMA node {numa})")
        elif actual[busid] != numa:
            problems.append(f"PCI {busid} on NUMA node {actual[busid]}, expected {numa}")
    placed = len(expected) - len(problems)
    if problems:
        return Verdict(FAIL, f"{'; '.join(problems)} ({found['file']})", placed, len(expected), "devices")
    return Verdict(PASS, f"{placed} devices where {found['file']} puts them", placed, len(expected), "devices")


HOST_CHECKS: tuple[CheckSpec, ...] = (
    ib_ports,
    nvme_count,
    cpu_shape,
    memory,
    swap_off,
    ib_flapping,
    accelerated_networking,
    pci_topology,
)
