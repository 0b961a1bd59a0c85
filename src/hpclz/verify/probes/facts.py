"""Typed readings of one node, as plain dataclasses (standard library only: the agent runs on bare nodes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

# NVML clock event reason bits (nvml.h nvmlClocksEventReason*), used by --query-gpu=clocks_event_reasons.active.
CLOCK_REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clocks_setting",
}


@dataclass
class Gpu:
    index: int
    bus_id: str
    name: str = ""
    memory_total_mib: int | None = None
    persistence_mode: bool | None = None
    ecc_enabled: bool | None = None
    ecc_volatile_uncorrected: int | None = None
    ecc_aggregate_uncorrected: int | None = None
    ecc_sram_uncorrected: int | None = None
    ecc_sram_corrected: int | None = None
    ecc_dram_corrected: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    remapped_uncorrectable: int | None = None
    # Newer memory-health flags (nvidia-smi XML, driver 570+ / 590+); None where the driver does not print them.
    sram_threshold_exceeded: bool | None = None
    unrepairable_memory: bool | None = None
    channel_repair_pending: bool | None = None
    tpc_repair_pending: bool | None = None
    # Pre-Ampere dynamic page retirement (retired_pages block): pages retired and whether more are pending.
    retired_pages: int | None = None
    retirement_pending: bool | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    clock_reasons: set[str] = field(default_factory=set)
    utilization_pct: float | None = None
    # The multi-node NVLink fabric as the driver reports it (<fabric> in nvidia-smi -q -x): N/A outside an NVLink
    # domain that spans VMs (the H100 capture in tests/fixtures/gpu/h100), Completed/Success once registered.
    fabric_state: str | None = None
    fabric_status: str | None = None
    fabric_clique: str | None = None
    fabric_cluster: str | None = None
    serial: str | None = None  # the board's serial number (nvidia-smi -q -x <serial>), which a health report names
    uuid: str | None = None

    def label(self) -> str:
        return f"GPU {self.index} ({self.bus_id})"


@dataclass
class NvidiaSmi:
    """The driver's answer: responsive or not, and the GPUs it listed."""

    responsive: bool
    error: str = ""
    gpus: list[Gpu] = field(default_factory=list)
    rc: int | None = None  # nvidia-smi's exit status when it failed
    lost: list[str] = field(default_factory=list)  # bus ids of GPUs it could not open (GPU is lost, Unknown Error)
    crashed: bool = False  # it printed, then died of a signal: no verdict on the GPUs either way
    driver_version: str = ""
    source: str = ""


@dataclass
class XidEvent:
    code: int
    pci: str
    line: str


@dataclass
class NvLink:
    gpu_index: int
    link: int
    active: bool
    speed_gbps: float | None = None


@dataclass
class IbPort:
    device: str
    port: int
    state: str
    rate_gbps: float | None
    link_layer: str = "InfiniBand"
    phys_state: str = ""

    @property
    def active(self) -> bool:
        return self.state.upper() == "ACTIVE"


@dataclass
class CpuInfo:
    sockets: int
    cores: int
    threads: int
    model: str = ""


T = TypeVar("T")


@dataclass
class Reading(Generic[T]):
    """A value that may be unavailable; `why` says why not."""

    value: T | None = None
    why: str = ""


@dataclass
class NodeFacts:
    node: str
    sku: str | None
    nvsmi: NvidiaSmi
    pci_gpus: Reading[list[str]] = field(default_factory=Reading)  # list[str]: NVIDIA GPU bus ids on the PCI bus
    xids: Reading[list[XidEvent]] = field(default_factory=Reading)  # list[XidEvent]
    nvlinks: Reading[list[NvLink]] = field(default_factory=Reading)  # list[NvLink]
    ib_ports: Reading[list[IbPort]] = field(default_factory=Reading)  # list[IbPort]
    carrier_losses: Reading[dict[str, int]] = field(
        default_factory=Reading
    )  # dict[ib interface, lost-carrier events in 24 h]
    nvme_count: Reading[int] = field(default_factory=Reading)  # int
    cpu: Reading[CpuInfo] = field(default_factory=Reading)  # CpuInfo
    mem_total_kb: Reading[int] = field(default_factory=Reading)  # int
    swap_kb: Reading[int] = field(default_factory=Reading)  # int
    topology: Reading[dict[str, Any]] = field(
        default_factory=lambda: Reading(None, "no Azure topology file for SKU unknown")
    )
    perf: Reading[dict[str, Any]] = field(
        default_factory=lambda: Reading(None, "perf tier not run")
    )  # dict[str, list[float]]
    clocks_under_load: Reading[list[Gpu]] = field(
        default_factory=lambda: Reading(None, "perf tier not run")
    )  # list[Gpu]
    dcgm: Reading[dict[str, Any]] = field(
        default_factory=lambda: Reading(None, "perf tier not run")
    )  # perf.dcgm_summary dict
    p2p: Reading[dict[str, Any]] = field(
        default_factory=lambda: Reading(None, "perf tier not run")
    )  # perf.measure_p2p dict
    stream: Reading[dict[str, Any]] = field(
        default_factory=lambda: Reading(None, "perf tier not run")
    )  # bench.parse_stream dict
    ib_bandwidth: Reading[dict[str, Any]] = field(
        default_factory=lambda: Reading(None, "perf tier not run")
    )  # bench.read_ib_write_bw
    nccl: Reading[dict[str, Any]] = field(
        default_factory=lambda: Reading(None, "--nccl not requested")
    )  # dict (CollectiveResult)
    nccl_ib_loopback: Reading[dict[str, Any]] = field(
        default_factory=lambda: Reading(None, "--nccl not requested")
    )  # same shape
    physical_host: Reading[str] = field(default_factory=Reading)  # Azure's name for the host (Hyper-V KVP pool 3)
    simulated: bool = False
