"""GPU checks read from nvidia-smi: count, memory, liveness, ECC, row remapping, Xid, NVLink, PCIe, clocks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hpclz.verify.checks.core import (
    FAIL,
    NOT_MEASURED,
    PASS,
    WARN,
    CheckSpec,
    Verdict,
    check,
    inconclusive,
    no_threshold,
    num,
)
from hpclz.verify.probes.facts import Gpu, NodeFacts, NvidiaSmi, NvLink, XidEvent
from hpclz.verify.probes.kernel import FATAL_XIDS, same_device
from hpclz.verify.probes.nvsmi import normalize_bus_id
from hpclz.verify.probes.source import INCONCLUSIVE
from hpclz.verify.thresholds import Thresholds

BRAKES = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def _gpus(count: int) -> str:
    return f"{count} GPU" if count == 1 else f"{count} GPUs"


def _silent(facts: NodeFacts) -> Verdict | None:
    """The verdict for GPU checks when there is no GPU reading to judge."""
    if facts.nvsmi.responsive:
        return None
    if facts.nvsmi.crashed:
        return inconclusive(f"not measured: {facts.nvsmi.error}")
    return Verdict(NOT_MEASURED, f"not measured: {facts.nvsmi.error or 'nvidia-smi did not answer'}")


Judge = Callable[[Gpu, list[str], list[str]], None]  # appends to fails, warns


def _gpu_issues(facts: NodeFacts, judge: Judge) -> tuple[list[str], list[str]]:
    fails: list[str] = []
    warns: list[str] = []
    for gpu in facts.nvsmi.gpus:
        judge(gpu, fails, warns)
    return fails, warns


def _verdict(fails: list[str], warns: list[str], ok: str, unit: str = "") -> Verdict:
    if fails:
        return Verdict(FAIL, "; ".join(fails + warns), measured=len(fails), threshold=0, unit=unit)
    if warns:
        return Verdict(WARN, "; ".join(warns), measured=len(warns), threshold=0, unit=unit)
    return Verdict(PASS, ok, measured=0, threshold=0, unit=unit)


# nvidia-smi(1), RETURN VALUE (the NVML return codes: 9 "NVIDIA driver is not loaded", 14 "infoROM is corrupted", 15
# "The GPU has fallen off the bus or has otherwise become inaccessible", 255 "Other error"), with aznhc's fault code
# for each, as csc_nvidia_smi.nhc maps them (Azure/azurehpc-health-checks@09ab175, lines 41-76; the same map at
# 0e0a1ac). NHCNA is aznhc's "not a hardware fault" (a driver or set-up problem: its Guest Health Report dictionary
# has no line for it).
NVSMI_RC_INFOROM = 14
NVSMI_RC_LOST = 15
NVSMI_RC_OTHER = 255
NVSMI_RC_CODES: dict[int, tuple[str, str]] = {
    2: ("NHCNA", "invalid argument or flag"),
    4: ("NHCNA", "permission denied"),
    8: ("NHC2001", "power cables not attached"),
    9: ("NHCNA", "NVIDIA driver not loaded"),
    10: ("NHC2001", "interrupt issue with a GPU"),
    12: ("NHCNA", "NVML shared library not found"),
    NVSMI_RC_INFOROM: ("NHC2008", "infoROM corrupted"),
}


def _nvsmi_failure(smi: NvidiaSmi) -> Verdict:
    """aznhc's reading of why nvidia-smi failed. Two deliberate differences: a GPU named in nvidia-smi's own words
    ("GPU is lost", corpus/nvsmi-lost/) is NHC2010 whatever the status; and 255 is nvidia-smi's "Other error" (NHC2001),
    where aznhc's `-gt 127` reads it as a fatal signal 127 (Linux has 64 signals). A process killed by a signal (a
    negative status from Python, 128+N from a shell) is NHC2015 as in aznhc, like a hang."""
    rc = smi.rc
    if smi.lost or rc == NVSMI_RC_LOST:
        which = f"GPU {', '.join(smi.lost)}" if smi.lost else "a GPU"
        return Verdict(FAIL, f"{which} lost: fallen off the bus or inaccessible ({smi.error})", nhc_code="NHC2010")
    if rc is not None and rc in NVSMI_RC_CODES:
        code, what = NVSMI_RC_CODES[rc]
        return Verdict(FAIL, f"{what} ({smi.error})", nhc_code=code)
    if "not responding" in smi.error or (rc is not None and (rc < 0 or 128 < rc < NVSMI_RC_OTHER)):
        return Verdict(FAIL, smi.error, nhc_code="NHC2015")
    return Verdict(FAIL, smi.error, nhc_code="NHC2001")


@check(
    "HPCLZ-VFY-001",
    "nvidia-smi responsiveness",
    "Reload the driver or reboot the node; if it persists, report the node to Azure (NHC2015 hang).",
    nhc_code="NHC2015",
)
def nvidia_smi_responsive(facts: NodeFacts, t: Thresholds) -> Verdict:
    """The driver must answer `nvidia-smi -q -x` within its timeout with a reading (aznhc check_nvsmi_healthmon).
    A hung or failing nvidia-smi means the driver or a GPU is wedged; nothing else on the node can be trusted.

    The fault code follows why it failed, as aznhc's csc_nvidia_smi.nhc maps nvidia-smi's exit status (lines 41-76 at
    Azure/azurehpc-health-checks@09ab175; the statuses are nvidia-smi(1)'s RETURN VALUE): a GPU nvidia-smi cannot
    open ("Unable to determine the device handle for GPU ...: GPU is lost", real outputs in corpus/nvsmi-lost/) or
    status 15, fallen off the bus, is NHC2010; 14, infoROM corrupted, NHC2008; 9 (driver not loaded), 2, 4 and 12
    NHCNA; a hang or a signal NHC2015; any other failure NHC2001. A GPU that falls off the bus need not leave an
    Xid 79 line in the kernel log (none in those reports), so this is the check that catches it then.

    Stricter than aznhc, which passes on exit status 0 alone: output that is not a GPU reading fails whatever the
    status ("No devices were found", "NVIDIA-SMI has failed ...", "Failed to initialize NVML ...": corpus/nvsmi-error/),
    as a tool that reads such a line as an answer reports GPUs that are not there (beasteers/singuconda#6).

    A tool that prints and then dies of a signal (nvidia-smi segfaulting after its header, Nevuly/WSL2-Linux-Kernel-
    Rolling#13; aborting on a stack check inside a container while the same GPU answers outside it,
    HaveAGitGat/Tdarr#1200: corpus/nvsmi-crash/) proves nothing about the GPU, failed or healthy: the check is
    inconclusive (not measured, flagged), and the health gate drains for a re-test instead of filing a fault. A
    signal with nothing printed stays NHC2015, as in aznhc."""
    smi = facts.nvsmi
    if smi.responsive:
        return Verdict(PASS, f"nvidia-smi listed {_gpus(len(smi.gpus))}")
    if t.get("gpu_count") is None and "not installed" in smi.error:
        return Verdict(NOT_MEASURED, f"not measured: {smi.error} (SKU {t.sku or 'unknown'} expects no GPU)")
    if smi.crashed:
        return inconclusive(smi.error)
    return _nvsmi_failure(smi)


@check(
    "HPCLZ-VFY-002",
    "GPU count",
    "A missing GPU needs a reboot; if it stays missing, deallocate the VM or report it (aznhc NHC2009).",
    nhc_code="NHC2009",
)
def gpu_count(facts: NodeFacts, t: Thresholds) -> Verdict:
    """The driver lists exactly as many GPUs as the VM size has (aznhc check_gpu_count, NHC2009)."""
    expected = t.get("gpu_count")
    if expected is None:
        return no_threshold(t, "gpu_count")
    silent = _silent(facts)
    if silent:
        return silent
    listed = len(facts.nvsmi.gpus)
    if listed == expected:
        return Verdict(PASS, _gpus(listed), listed, num(expected), "GPUs")
    message = f"{listed} of {num(expected)} GPUs listed by the driver"
    if facts.pci_gpus.value is not None:
        on_bus = [normalize_bus_id(b) for b in facts.pci_gpus.value]
        missing = sorted(set(on_bus) - {g.bus_id for g in facts.nvsmi.gpus})
        if missing:
            message += f"; on the PCI bus but not listed: {', '.join(missing)}"
        if len(on_bus) < expected:
            message += f"; only {len(on_bus)} on the PCI bus (fallen off the bus or not attached to the VM)"
    else:
        message += f" (listed: {', '.join(g.bus_id for g in facts.nvsmi.gpus) or 'none'})"
    return Verdict(FAIL, message, listed, num(expected), "GPUs")


@check(
    "HPCLZ-VFY-003",
    "GPU memory size",
    "Less framebuffer than the model has usually means MIG or a retired-page-table fault: reset the GPU or report the node.",
)
def gpu_memory(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Each GPU reports at least the framebuffer its model has."""
    expected = t.get("gpu_memory_mib_min")
    if expected is None:
        return no_threshold(t, "gpu_memory_mib_min")
    silent = _silent(facts)
    if silent:
        return silent
    low = [g for g in facts.nvsmi.gpus if g.memory_total_mib is not None and g.memory_total_mib < expected]
    smallest = min((g.memory_total_mib or 0 for g in facts.nvsmi.gpus), default=0)
    if low:
        parts = [f"{g.label()}: {g.memory_total_mib} MiB < {num(expected)} MiB" for g in low]
        return Verdict(FAIL, "; ".join(parts), smallest, num(expected), "MiB")
    return Verdict(PASS, f"smallest GPU has {smallest} MiB", smallest, num(expected), "MiB")


@check(
    "HPCLZ-VFY-004",
    "GPU ECC errors",
    "Drain the node and reset the GPU (nvidia-smi -r); a GPU that keeps reporting uncorrectable errors goes back to Azure.",
    nhc_code="NHC2019",
)
def gpu_ecc(facts: NodeFacts, t: Thresholds) -> Verdict:
    """ECC must be enabled; no uncorrectable error since the last reset (volatile) and no uncorrectable SRAM
    error ever; corrected counts stay under aznhc's limits (check_gpu_ecc 20000000 10000, NHC2019 DBE)."""
    silent = _silent(facts)
    if silent:
        return silent
    sram_max = t.get("ecc_sram_corrected_max")
    dram_max = t.get("ecc_dram_corrected_max")

    def judge(g: Gpu, fails: list[str], warns: list[str]) -> None:
        if g.ecc_enabled is False:
            fails.append(f"{g.label()}: ECC is disabled")
        if g.ecc_volatile_uncorrected:
            fails.append(f"{g.label()}: {g.ecc_volatile_uncorrected} uncorrectable ECC errors since reset (expected 0)")
        if g.ecc_sram_uncorrected:
            fails.append(f"{g.label()}: {g.ecc_sram_uncorrected} uncorrectable SRAM ECC errors (expected 0)")
        elif g.ecc_aggregate_uncorrected and not g.ecc_volatile_uncorrected:
            warns.append(f"{g.label()}: {g.ecc_aggregate_uncorrected} uncorrectable DRAM errors in its lifetime")
        if g.sram_threshold_exceeded:
            fails.append(f"{g.label()}: SRAM ECC error threshold exceeded (sram_threshold_exceeded)")
        if sram_max is not None and (g.ecc_sram_corrected or 0) > sram_max:
            fails.append(f"{g.label()}: {g.ecc_sram_corrected} corrected SRAM errors > {num(sram_max)}")
        if dram_max is not None and (g.ecc_dram_corrected or 0) > dram_max:
            fails.append(f"{g.label()}: {g.ecc_dram_corrected} corrected DRAM errors > {num(dram_max)}")
        _retired_pages(g, fails, warns)

    return _verdict(*_gpu_issues(facts, judge), ok="no uncorrectable ECC errors", unit="GPUs")


@check(
    "HPCLZ-VFY-005",
    "GPU row remapping",
    "A pending remap clears with a GPU reset (drain, nvidia-smi -r); a remap failure means the GPU must be replaced (NHC2007).",
    nhc_code="NHC2007",
)
def row_remap(facts: NodeFacts, t: Thresholds) -> Verdict:
    """HBM row remapping: a pending remap needs a GPU reset before the row is retired; a failed remap (no spare
    rows left) means the GPU must be replaced (aznhc check_gpu_ecc, NHC2007)."""
    silent = _silent(facts)
    if silent:
        return silent

    remap_max = t.get("remapped_rows_unc_max")

    def judge(g: Gpu, fails: list[str], warns: list[str]) -> None:
        if g.remap_failure:
            fails.append(f"{g.label()}: row remapping FAILED (no spare rows)")
        if g.remap_pending:
            fails.append(f"{g.label()}: row remap pending (reset the GPU)")
        if remap_max is not None and (g.remapped_uncorrectable or 0) > remap_max:
            fails.append(
                f"{g.label()}: {g.remapped_uncorrectable} rows remapped for uncorrectable errors > {num(remap_max)}"
            )
        if g.unrepairable_memory:
            fails.append(f"{g.label()}: driver reports unrepairable memory")
        for flag, what in ((g.channel_repair_pending, "memory channel"), (g.tpc_repair_pending, "TPC")):
            if flag:
                fails.append(f"{g.label()}: {what} repair pending (reset the GPU)")

    spent = sum(g.remapped_uncorrectable or 0 for g in facts.nvsmi.gpus)
    # Rows remapped for uncorrectable errors are history while spares last; beyond aznhc's 512 the GPU is worn out.
    ok = "no pending or failed row remap" + (f" ({spent} rows remapped for uncorrectable errors)" if spent else "")
    return _verdict(*_gpu_issues(facts, judge), ok=ok, unit="GPUs")


# aznhc check_SDBE_ecc (customTests/azure_gpu_ecc.nhc:100-157, the V100 path): a retirement table of 62 or more
# single+double bit pages with a retirement still pending is full (NHC2018).
RETIRED_PAGES_FULL = 62


def _retired_pages(g: Gpu, fails: list[str], warns: list[str]) -> None:
    if not g.retirement_pending:
        return
    if (g.retired_pages or 0) >= RETIRED_PAGES_FULL:
        fails.append(f"{g.label()}: page retirement table full ({g.retired_pages} pages) with a retirement pending")
    else:
        warns.append(f"{g.label()}: page retirement pending ({g.retired_pages or 0} retired): reload the driver")


@check(
    "HPCLZ-VFY-006",
    "Fatal Xid events in the kernel log",
    "Drain the node; reboot (79, 48, 94/95 need at least a GPU reset) and report repeated Xids to Azure with the log line.",
    nhc_code="NHC2001",
)
def gpu_xid(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Fatal Xid codes since boot (aznhc check_gpu_xid: 48 56 57 58 62 63 64 65 68 69 73 74 79 80 81 92 119 120,
    plus 94/95 from its GHR dictionary). Codes 13, 31 and 43 are faults of the application and are ignored."""
    if facts.xids.value is None:
        return Verdict(NOT_MEASURED, f"not measured: kernel log unreadable: {facts.xids.why}")
    events: list[XidEvent] = list(facts.xids.value)
    fatal = [e for e in events if e.code in FATAL_XIDS]
    if not fatal:
        other = sorted({e.code for e in events})
        note = f" (non-fatal Xid {', '.join(map(str, other))} ignored)" if other else ""
        return Verdict(PASS, f"no fatal Xid{note}", 0, 0, "events")
    parts = []
    for e in fatal:
        gpu = next((g for g in facts.nvsmi.gpus if same_device(e.pci, g.bus_id)), None)
        where = gpu.label() if gpu else f"PCI {e.pci}"
        parts.append(f"Xid {e.code} ({FATAL_XIDS[e.code][0]}) on {where}")
    code = FATAL_XIDS[fatal[-1].code][1]
    return Verdict(FAIL, "; ".join(dict.fromkeys(parts)), len(fatal), 0, "events", nhc_code=code)


@check(
    "HPCLZ-VFY-007",
    "NVLink state",
    "An inactive NVLink needs a reboot; if it stays down, report the node to Azure (NHC2016).",
    nhc_code="NHC2016",
)
def nvlink(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Each GPU has the SKU's number of active NVLinks (aznhc check_nvlink_status: any <inactive> link fails)."""
    expected = t.get("nvlink_links_per_gpu")
    if not expected:
        return no_threshold(t, "nvlink_links_per_gpu")
    silent = _silent(facts)
    if silent:
        return silent
    if facts.nvlinks.value is None:
        if facts.nvlinks.why.startswith(INCONCLUSIVE):  # the tool crashed: no evidence against the links
            return inconclusive(f"NVLink state not read: {facts.nvlinks.why}")
        return Verdict(FAIL, f"NVLink state unreadable: {facts.nvlinks.why}", None, num(expected), "links")
    links: list[NvLink] = list(facts.nvlinks.value)
    fails = []
    fewest = int(expected)
    for g in facts.nvsmi.gpus:
        mine = [link for link in links if link.gpu_index == g.index]
        down = [link.link for link in mine if not link.active]
        up = len(mine) - len(down)
        fewest = min(fewest, up)
        if down:
            fails.append(f"{g.label()}: NVLink {', '.join(map(str, down))} inactive ({up}/{num(expected)} up)")
        elif up < expected:
            fails.append(f"{g.label()}: {up} NVLinks, expected {num(expected)}")
    if fails:
        return Verdict(FAIL, "; ".join(fails), fewest, num(expected), "links")
    return Verdict(PASS, f"{num(expected)} links up on every GPU", fewest, num(expected), "links")


@check(
    "HPCLZ-VFY-008",
    "GPU PCIe link generation and width",
    "A downtrained link (lower generation or fewer lanes) halves host bandwidth: reboot; if it persists, report the node.",
)
def pcie_link(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Each GPU's host link runs at the SKU's PCIe generation and width. Idle GPUs lower the generation to save
    power (telegraf's A10G capture, driver 515: Gen1 of Gen4 while idle), so a low generation on an idle GPU only
    warns, and the perf tier re-reads the link while every GPU runs GEMMs: a low generation there fails. Fewer
    lanes always fail. Without a SKU threshold nothing is judged: a card's own maximum is not the slot's (the same
    captures show healthy T4 and A10G cards at x8 of x16)."""
    silent = _silent(facts)
    if silent:
        return silent
    want_gen, want_width = t.get("pcie_gen"), t.get("pcie_width")
    if want_gen is None or want_width is None:
        seen = ", ".join(sorted({f"Gen{g.pcie_gen} x{g.pcie_width}" for g in facts.nvsmi.gpus}))
        return Verdict(NOT_MEASURED, f"not judged: no PCIe threshold for SKU {t.sku or 'unknown'} (links: {seen})")
    loaded = {g.bus_id: g for g in facts.clocks_under_load.value or []}
    expected = f"expected Gen{num(want_gen)} x{num(want_width)}"

    def judge(g: Gpu, fails: list[str], warns: list[str]) -> None:
        if g.pcie_gen is None or g.pcie_width is None:
            warns.append(f"{g.label()}: PCIe link not reported")
            return
        shown = f"{g.label()}: PCIe Gen{g.pcie_gen} x{g.pcie_width}, {expected}"
        busy = loaded.get(g.bus_id)
        if g.pcie_width < want_width:
            fails.append(shown)
        elif busy is not None and busy.pcie_gen is not None and busy.pcie_gen < want_gen:
            fails.append(f"{g.label()}: PCIe Gen{busy.pcie_gen} under GEMM load, {expected}")
        elif g.pcie_gen < want_gen and busy is None:
            idle = "gpu_idle" in g.clock_reasons
            (warns if idle else fails).append(shown + (" (GPU idle: re-check under load)" if idle else ""))

    return _verdict(*_gpu_issues(facts, judge), ok="every GPU link at full generation and width", unit="GPUs")


@check(
    "HPCLZ-VFY-009",
    "GPU clock slowdown (thermal, power brake)",
    "Check the GPU's cooling and power (nvidia-smi -q -d PERFORMANCE,TEMPERATURE); report persistent HW slowdown to Azure.",
)
def clock_events(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Clock event reasons: HW slowdown, HW thermal, HW power brake or SW thermal slowdown on a busy GPU fails; on an
    idle GPU it warns. Idle, application-clock and SW power-cap reasons are normal (aznhc only warns on any).
    The perf tier also reads the reasons while every GPU runs GEMMs, where a brake shows when it matters."""
    silent = _silent(facts)
    if silent:
        return silent

    def judge(g: Gpu, fails: list[str], warns: list[str], when: str = "") -> None:
        active = [r for r in BRAKES if r in g.clock_reasons]
        if not active:
            return
        idle = "gpu_idle" in g.clock_reasons
        busy = f"{g.utilization_pct:g}% busy" if g.utilization_pct is not None else "not idle"
        load = "idle" if idle else f"under load ({busy}{when})"
        (warns if idle else fails).append(f"{g.label()}: {', '.join(active)} active while {load}")

    fails, warns = _gpu_issues(facts, judge)
    loaded: list[Gpu] = list(facts.clocks_under_load.value or [])
    by_bus = {g.bus_id: g.index for g in facts.nvsmi.gpus}
    for g in loaded:
        if g.bus_id in by_bus:  # name it by the driver's index, as every other message does
            judge(replace(g, index=by_bus[g.bus_id]), fails, warns, ", GEMM load")
    return _verdict(
        fails,
        warns,
        ok="no thermal or power-brake slowdown" + (" (also under GEMM load)" if loaded else ""),
        unit="GPUs",
    )


@check(
    "HPCLZ-VFY-010",
    "GPU persistence mode",
    "Enable it at boot (nvidia-persistenced, or nvidia-smi -pm 1): without it every job pays driver start-up and GPU state resets.",
    severity="warning",
)
def persistence(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Persistence mode keeps the driver loaded between jobs (the Azure HPC images enable nvidia-persistenced)."""
    silent = _silent(facts)
    if silent:
        return silent

    def judge(g: Gpu, fails: list[str], warns: list[str]) -> None:
        if g.persistence_mode is False:
            warns.append(f"{g.label()}: persistence mode is off")

    return _verdict(*_gpu_issues(facts, judge), ok="persistence mode on for every GPU", unit="GPUs")


GPU_CHECKS: tuple[CheckSpec, ...] = (
    nvidia_smi_responsive,
    gpu_count,
    gpu_memory,
    gpu_ecc,
    row_remap,
    gpu_xid,
    nvlink,
    pcie_link,
    clock_events,
    persistence,
)
