"""Parsers for `nvidia-smi -q -x` and `nvidia-smi --query-gpu=... --format=csv`.

Both are checked against the real H200 output in tests/fixtures/gpu/h200/. "N/A", "[N/A]" and
"[Not Supported]" read as unknown (None), never as zero: a missing counter must not pass as healthy.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from typing import Any

from hpclz.verify.probes.facts import CLOCK_REASON_BITS, Gpu

QUERY_FIELDS = (
    "index,pci.bus_id,name,memory.total,persistence_mode,ecc.mode.current,"
    "ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,"
    "ecc.errors.corrected.volatile.total,remapped_rows.pending,remapped_rows.failure,"
    "clocks_event_reasons.active,utilization.gpu,"
    "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max"
)

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def number(text: str | None) -> float | None:
    if text is None:
        return None
    text = text.strip()
    if not text or "N/A" in text or "Not Supported" in text or "Unknown" in text:
        return None
    found = _NUMBER.search(text)
    return float(found.group()) if found else None


def integer(text: str | None) -> int | None:
    value = number(text)
    return None if value is None else int(value)


def yes_no(text: str | None) -> bool | None:
    word = (text or "").strip().lower()
    if word in {"yes", "enabled", "active", "on", "1"}:
        return True
    if word in {"no", "disabled", "not active", "off", "0"}:
        return False
    return None


def normalize_bus_id(bus_id: str) -> str:
    """00000000:9B:00.0 -> 00000000:9B:00.0 (domain padded to 8, upper case), the form nvidia-smi prints."""
    m = re.match(r"^(?:([0-9A-Fa-f]+):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.([0-7]))?$", bus_id.strip())
    if not m:
        return bus_id.strip()
    domain, bus, dev, fn = m.group(1) or "0", m.group(2), m.group(3), m.group(4) or "0"
    return f"{int(domain, 16):08X}:{int(bus, 16):02X}:{int(dev, 16):02X}.{fn}"


def _text(node: ET.Element, path: str) -> str | None:
    found = node.find(path)
    return found.text if found is not None else None


def _known(text: str | None) -> str | None:
    text = (text or "").strip()
    return None if not text or "N/A" in text or "Not Supported" in text else text


def _sum(*values: int | None) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def parse_xml(text: str) -> tuple[list[Gpu], str]:
    """GPUs in the order nvidia-smi lists them (its index order) and the driver version. Any XML that is not an
    `<nvidia_smi_log>` raises ParseError: it is not a reading, whatever the exit status."""
    root = ET.fromstring(_strip_doctype(text))
    if root.tag != "nvidia_smi_log":
        raise ET.ParseError(f"not an nvidia-smi log: <{root.tag}>")
    gpus = [_xml_gpu(index, node) for index, node in enumerate(root.findall("gpu"))]
    return gpus, _text(root, "driver_version") or ""


def _xml_gpu(index: int, node: ET.Element) -> Gpu:
    reasons = {
        child.tag.removeprefix("clocks_event_reason_").removeprefix("clocks_throttle_reason_")
        for child in _reason_nodes(node)
        if yes_no(child.text)
    }
    link = "pci/pci_gpu_link_info/"
    return Gpu(
        index=index,
        bus_id=normalize_bus_id(_text(node, "pci/pci_bus_id") or node.get("id") or ""),
        name=_text(node, "product_name") or "",
        memory_total_mib=integer(_text(node, "fb_memory_usage/total")),
        persistence_mode=yes_no(_text(node, "persistence_mode")),
        ecc_enabled=yes_no(_text(node, "ecc_mode/current_ecc")),
        pcie_gen=integer(_text(node, link + "pcie_gen/current_link_gen")),
        pcie_gen_max=integer(_text(node, link + "pcie_gen/max_link_gen")),
        pcie_width=integer(_text(node, link + "link_widths/current_link_width")),
        pcie_width_max=integer(_text(node, link + "link_widths/max_link_width")),
        clock_reasons=reasons,
        utilization_pct=number(_text(node, "utilization/gpu_util")),
        fabric_state=_text(node, "fabric/state"),
        fabric_status=_text(node, "fabric/status"),
        fabric_clique=_text(node, "fabric/cliqueId"),
        fabric_cluster=_text(node, "fabric/clusterUuid"),
        serial=_known(_text(node, "serial")),
        uuid=_known(_text(node, "uuid")),
        **_memory_health(node),
    )


# Three layouts of <ecc_errors> across drivers (aznhc-facts.md §7, from telegraf's real captures):
# - up to Volta/Pascal (418.43, 525): {volatile,aggregate}/{single_bit,double_bit}/total;
# - 515-536 (T4, A10G, A100): {volatile,aggregate}/{sram,dram}_{correctable,uncorrectable};
# - 570+: sram_uncorrectable split into _parity and _secded, plus aggregate/sram_threshold_exceeded; 590+ adds
#   channel_repair_pending, tpc_repair_pending and unrepairable_memory directly under <ecc_errors>.
_SRAM_UNCORRECTED = ("sram_uncorrectable", "sram_uncorrectable_parity", "sram_uncorrectable_secded")


def _uncorrected(node: ET.Element, scope: str) -> int | None:
    ecc = f"ecc_errors/{scope}/"
    return _sum(
        *(integer(_text(node, ecc + k)) for k in (*_SRAM_UNCORRECTED, "dram_uncorrectable", "double_bit/total"))
    )


def _memory_health(node: ET.Element) -> dict[str, Any]:
    ecc, pages = "ecc_errors/", "retired_pages/"
    retired = _sum(
        integer(_text(node, pages + "multiple_single_bit_retirement/retired_count")),
        integer(_text(node, pages + "double_bit_retirement/retired_count")),
    )
    # 418.43 has only pending_retirement; later drivers print pending_blacklist too (the "Pending Page Blacklist"
    # aznhc's V100 check reads). Either one pending means the page is retired at the next driver reload.
    pending = [yes_no(_text(node, pages + tag)) for tag in ("pending_blacklist", "pending_retirement")]
    return {
        "ecc_volatile_uncorrected": _uncorrected(node, "volatile"),
        "ecc_aggregate_uncorrected": _uncorrected(node, "aggregate"),
        "ecc_sram_uncorrected": _sum(*(integer(_text(node, ecc + "aggregate/" + k)) for k in _SRAM_UNCORRECTED)),
        "ecc_sram_corrected": integer(_text(node, ecc + "aggregate/sram_correctable")),
        "ecc_dram_corrected": integer(_text(node, ecc + "aggregate/dram_correctable")),
        "sram_threshold_exceeded": yes_no(_text(node, ecc + "aggregate/sram_threshold_exceeded")),
        "unrepairable_memory": yes_no(_text(node, ecc + "unrepairable_memory")),
        "channel_repair_pending": yes_no(_text(node, ecc + "channel_repair_pending")),
        "tpc_repair_pending": yes_no(_text(node, ecc + "tpc_repair_pending")),
        "remap_pending": yes_no(_text(node, "remapped_rows/remapped_row_pending")),
        "remap_failure": yes_no(_text(node, "remapped_rows/remapped_row_failure")),
        "remapped_uncorrectable": integer(_text(node, "remapped_rows/remapped_row_unc")),
        "retired_pages": retired,
        "retirement_pending": True if True in pending else (False if False in pending else None),
    }


def _reason_nodes(gpu: ET.Element) -> list[ET.Element]:
    # Drivers before 535 call the block clocks_throttle_reasons; the leaves are the same flags.
    for tag in ("clocks_event_reasons", "clocks_throttle_reasons"):
        block = gpu.find(tag)
        if block is not None:
            return list(block)
    return []


def _strip_doctype(text: str) -> str:
    # ElementTree cannot resolve the external DTD nvidia-smi references, and needs none.
    return re.sub(r"<!DOCTYPE[^>]*>", "", text, count=1)


def parse_csv(text: str) -> list[Gpu]:
    """`--query-gpu` CSV with its header line (`--format=csv`); unknown columns are ignored.

    Text whose first line is not the query's header raises ValueError: nvidia-smi prints its errors ("No devices
    were found", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", real outputs in
    corpus/nvsmi-error/) where the header would be, and read as a CSV such a line is a header with no rows, i.e.
    zero GPUs and no error: a liveness check that passes on an error message."""
    rows = list(csv.reader(io.StringIO(text.strip()), skipinitialspace=True))
    header = [re.sub(r"\s*\[.*\]$", "", h.strip()) for h in rows[0]] if rows else []
    if not {"index", "pci.bus_id"} <= set(header):
        raise ValueError("not a --query-gpu answer: no index and pci.bus_id header")
    gpus = []
    for position, row in enumerate(rows[1:]):
        if not row:
            continue
        col = dict(zip(header, (cell.strip() for cell in row), strict=False))
        index = integer(col.get("index"))
        gpus.append(
            Gpu(
                index=position if index is None else index,
                bus_id=normalize_bus_id(col.get("pci.bus_id", "")),
                name=col.get("name", ""),
                memory_total_mib=integer(col.get("memory.total")),
                persistence_mode=yes_no(col.get("persistence_mode")),
                ecc_enabled=yes_no(col.get("ecc.mode.current")),
                ecc_volatile_uncorrected=integer(col.get("ecc.errors.uncorrected.volatile.total")),
                ecc_aggregate_uncorrected=integer(col.get("ecc.errors.uncorrected.aggregate.total")),
                remap_pending=yes_no(col.get("remapped_rows.pending")),
                remap_failure=yes_no(col.get("remapped_rows.failure")),
                pcie_gen=integer(col.get("pcie.link.gen.current")),
                pcie_gen_max=integer(col.get("pcie.link.gen.max")),
                pcie_width=integer(col.get("pcie.link.width.current")),
                pcie_width_max=integer(col.get("pcie.link.width.max")),
                clock_reasons=clock_reasons_from_mask(col.get("clocks_event_reasons.active")),
                utilization_pct=number(col.get("utilization.gpu")),
            )
        )
    return gpus


def clock_reasons_from_mask(mask: str | None) -> set[str]:
    if not mask or "N/A" in mask:
        return set()
    value = int(mask, 16) if mask.lower().startswith("0x") else int(mask)
    return {name for bit, name in CLOCK_REASON_BITS.items() if value & bit}


# What nvidia-smi prints for a GPU the driver cannot open, as captured in public reports (corpus/nvsmi-lost/):
# "Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost.  Reboot the system to recover this GPU"
# and "... for GPU0000:07:00.0: Unknown Error" (no space after "GPU" in some drivers' output).
_LOST = re.compile(
    r"Unable to determine the device handle for GPU ?(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): (?P<why>[^\n]+)"
)


def lost_gpus(text: str) -> list[tuple[str, str]]:
    """(bus id, nvidia-smi's words) for each GPU nvidia-smi could not open, in the order it printed them."""
    return [(m["bus"], " ".join(m["why"].split())) for m in _LOST.finditer(" ".join(text.split("\n ")))]
