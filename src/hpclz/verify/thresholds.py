"""Per-SKU pass thresholds (thresholds.json, each with its source) and config overrides.

Standard library only, so the node agent can load it. The config's `verify.thresholds[sku][metric]` wins
over the data file; the head node passes those overrides to the agent as `--set metric=value`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).with_name("thresholds.json")

METRICS: dict[str, str] = {
    "gpu_count": "GPUs the driver must list",
    "gpu_memory_mib_min": "framebuffer memory per GPU, MiB, at least",
    "nvlink_links_per_gpu": "active NVLinks per GPU",
    "pcie_gen": "PCIe generation of each GPU's host link",
    "pcie_width": "PCIe lanes of each GPU's host link",
    "ib_ports": "InfiniBand ports that must be ACTIVE",
    "ib_rate_gbps": "rate of each InfiniBand port, Gb/s",
    "an_rate_gbps": "rate of the accelerated-networking Ethernet port (mlx5_an0), Gb/s",
    "nvme_count": "local NVMe namespaces",
    "cpu_sockets": "CPU sockets",
    "cpu_cores": "physical CPU cores",
    "cpu_threads": "logical CPUs (hardware threads)",
    "mem_total_kb": "MemTotal, kB",
    "mem_tolerance_pct": "allowed deviation of MemTotal, percent",
    "ecc_sram_corrected_max": "corrected SRAM ECC errors per GPU, at most",
    "ecc_dram_corrected_max": "corrected DRAM ECC errors per GPU, at most",
    "remapped_rows_unc_max": "HBM rows remapped for uncorrectable errors per GPU, at most",
    "gemm_bf16_tflops": "bf16 GEMM 8192^3 per GPU, TFLOP/s, at least",
    "hbm_copy_tbps": "device-to-device copy per GPU (bytes read + written), TB/s, at least",
    "h2d_gbps": "pinned host-to-device copy per GPU, GB/s, at least",
    "d2h_gbps": "pinned device-to-host copy per GPU, GB/s, at least",
    "p2p_gbps": "copy-engine read between each pair of NVLink-connected GPUs (nvbandwidth), GB/s, at least",
    "nccl_allreduce_busbw_gbps": "intra-node all-reduce bus bandwidth at the SKU's message size, GB/s, at least",
    "nccl_ib_loopback_busbw_gbps": "intra-node all-reduce with NVLink and shared memory off (through the HCAs), busbw GB/s, at least",
    "nccl_allreduce_bytes": "intra-node all-reduce message size, bytes (aznhc's per-SKU size; 16 GiB by default)",
    "stream_mbps": "STREAM Copy, Scale, Add and Triad, MB/s, each at least",
    "ib_write_bw_gbps": "ib_write_bw loopback per InfiniBand HCA, host memory, Gb/s, at least",
    "ib_write_bw_gdr_gbps": "ib_write_bw loopback per InfiniBand HCA from GPU memory (GPUDirect RDMA), Gb/s, at least",
    "nvlink_fabric": "1: every GPU must report its multi-node NVLink fabric registered, all in one domain (IMEX)",
    "internode_allreduce_busbw_gbps": "2-node (ring pair) NCCL all-reduce bus bandwidth at the largest size, GB/s, at least",
    "rack_allreduce_busbw_gbps": "all-reduce bus bandwidth inside one NVLink domain (a rack, MNNVL) at the largest size, GB/s, at least",
}


@dataclass
class Thresholds:
    sku: str | None
    values: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def get(self, metric: str) -> float | None:
        return self.values.get(metric)

    def source(self, metric: str) -> str:
        return self.sources.get(metric, "")


def canonical_sku(sku: str, known: list[str]) -> str | None:
    """Match 'nd96isr_h200_v5', 'Standard_ND96isr_H200_v5' (the IMDS form) case-insensitively."""
    wanted = sku.lower().removeprefix("standard_")
    for name in known:
        if name.lower().removeprefix("standard_") == wanted:
            return name
    return None


def known_skus(data_file: Path = DATA_FILE) -> list[str]:
    return sorted(_data(data_file)["skus"])


def required_metrics(
    sku: str, *, gpus: int, ib_ports: int, nvme: int, nvidia: bool = True, c2c: bool = False
) -> list[set[str]]:
    """What a size's thresholds must hold for verify to judge every check aznhc runs on it; each set is satisfied
    by any one of its metrics. The shape of every node (threads, memory); IB port state and a loopback ib_write_bw
    where it has InfiniBand (from GPU memory or host memory: aznhc uses one or the other per size); its NVMe
    disks; STREAM on the HB and HX sizes (aznhc check_cpu_stream); on NVIDIA sizes the GPU count, memory, PCIe
    link and host<->device bandwidth, plus the all-reduce on multi-GPU sizes and NVLink on the 8-GPU ND sizes.
    AMD GPUs are read by rocm-smi, which hpclz does not run, so they add no GPU metric. `c2c`: the GPUs reach the
    host over NVLink-C2C, not PCIe (Grace hosts: ND GB200 v6 moves 201 GB/s host to device, Azure/AI-benchmarking-guide
    @2a370be Azure_Results/ND_GB200_v6_results.md, beyond any PCIe Gen5 x16 link), so no PCIe link is asked for."""
    need = [{"cpu_threads"}, {"mem_total_kb"}, {"mem_tolerance_pct"}]
    if ib_ports:
        need += [{"ib_ports"}, {"ib_rate_gbps"}, {"ib_write_bw_gbps", "ib_write_bw_gdr_gbps"}]
    if nvme:
        need.append({"nvme_count"})
    if sku.lower().removeprefix("standard_").startswith(("hb", "hx")):
        need.append({"stream_mbps"})
    if gpus and nvidia:
        need += [{m} for m in ("gpu_count", "gpu_memory_mib_min", "h2d_gbps", "d2h_gbps")]
        if not c2c:
            need += [{"pcie_gen"}, {"pcie_width"}]
        if gpus > 1:
            need.append({"nccl_allreduce_busbw_gbps"})
        if gpus == 8:
            need.append({"nvlink_links_per_gpu"})
    return need


def check_overrides(overrides: Mapping[str, float], where: str = "") -> None:
    """A misspelt metric would silently never apply: refuse it, naming where it came from."""
    for metric in overrides:
        if metric not in METRICS:
            raise ValueError(f"{where}{metric}: unknown threshold metric; known: {', '.join(sorted(METRICS))}")


def load_thresholds(
    sku: str | None, overrides: Mapping[str, float] | None = None, data_file: Path = DATA_FILE
) -> Thresholds:
    data = _data(data_file)
    found = canonical_sku(sku, list(data["skus"])) if sku else None
    result = Thresholds(sku=found or sku)
    for layer in (data["defaults"], data["skus"].get(found, {}) if found else {}):
        for metric, entry in layer.items():
            result.values[metric] = float(entry["value"])
            result.sources[metric] = str(entry["source"])
    check_overrides(overrides or {})
    for metric, value in (overrides or {}).items():
        result.values[metric] = float(value)
        result.sources[metric] = "config override"
    return result


def overrides_for(table: Mapping[str, Mapping[str, float]], sku: str | None) -> dict[str, float]:
    """The overrides in a config's verify.thresholds table that apply to SKU."""
    if not sku:
        return {}
    picked: dict[str, float] = {}
    for name, metrics in table.items():
        if canonical_sku(sku, [name]):
            check_overrides(metrics, f"verify.thresholds.{name}.")
            picked.update(metrics)
    return picked


def agent_arguments(overrides: Mapping[str, float]) -> list[str]:
    """The `--set metric=value` flags that carry config overrides to a node agent."""
    args: list[str] = []
    for metric, value in sorted(overrides.items()):
        # repr round-trips a float exactly; :g would round a ten-digit MemTotal to six digits.
        text = str(int(value)) if float(value).is_integer() else repr(float(value))
        args += ["--set", f"{metric}={text}"]
    return args


def _data(data_file: Path) -> dict[str, Any]:
    if data_file == DATA_FILE:
        # importlib.resources also reads the file from inside the single-file agent bundle (a zip).
        text = resources.files("hpclz.verify").joinpath("thresholds.json").read_text()
    else:
        text = data_file.read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded
