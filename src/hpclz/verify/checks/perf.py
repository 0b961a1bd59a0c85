"""Performance tier checks: GEMM, HBM, host<->device and peer copies, DCGM quick diag, intra-node all-reduces.

The readings come from hpclz.verify.perf / hpclz.verify.nccl (facts.perf, facts.dcgm, facts.nccl); without a
CUDA device each check reports "not measured: <reason>" instead of guessing.
"""

from __future__ import annotations

from typing import Any

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
from hpclz.verify.probes.facts import NodeFacts, Reading
from hpclz.verify.probes.source import INCONCLUSIVE
from hpclz.verify.thresholds import Thresholds


def _unmeasured(facts: NodeFacts, t: Thresholds, metrics: tuple[str, ...], why: str) -> Verdict:
    """Not measured is not passed: on a size with a threshold for it, and GPUs the driver lists, a benchmark that
    could not run (no torch/CuPy, no nccl-tests) fails; elsewhere there was nothing to measure."""
    goal = next((t.get(m) for m in metrics if t.get(m) is not None), None)
    if goal is not None and facts.nvsmi.gpus:
        return Verdict(FAIL, f"could not measure on a size that requires it: {why}", None, num(goal))
    return Verdict(NOT_MEASURED, f"not measured: {why}")


def _per_gpu(facts: NodeFacts, t: Thresholds, metrics: tuple[str, ...], unit: str) -> Verdict:
    if facts.perf.value is None:
        return _unmeasured(facts, t, metrics, facts.perf.why)
    perf: dict[str, Any] = facts.perf.value
    fails, notes, lowest, goal = [], [], None, None
    for metric in metrics:
        entry = perf.get(metric) or {}
        values = entry.get("values")
        if not values:
            notes.append(f"{metric} not measured: {entry.get('why', 'no reading')}")
            continue
        threshold = t.get(metric)
        low = min(v for v in values if v is not None)
        lowest = low if lowest is None else min(lowest, low)
        if threshold is None:
            notes.append(f"{metric} {low:.4g} {unit} (no threshold for SKU {t.sku or 'unknown'})")
            continue
        goal = threshold if goal is None else min(goal, threshold)
        by = entry.get("method", "")
        labels = {g.index: g.label() for g in facts.nvsmi.gpus}
        for index, value in enumerate(values):
            if value is not None and value < threshold:
                where = labels.get(index, f"GPU {index}")
                fails.append(
                    f"{where}: {metric} {value:.4g} {unit} < {num(threshold)} {unit}{f' ({by})' if by else ''}"
                )
    measured = round(lowest, 3) if lowest is not None else None
    if fails:
        return Verdict(FAIL, "; ".join(fails + notes), measured, goal, unit)
    if lowest is None:
        return _unmeasured(facts, t, metrics, "; ".join(notes))
    if goal is None:
        return Verdict(WARN, "; ".join(notes), measured, None, unit)
    return Verdict(
        PASS, "; ".join([f"slowest GPU {lowest:.4g} {unit} >= {num(goal)} {unit}", *notes]), measured, goal, unit
    )


@check(
    "HPCLZ-VFY-020",
    "GEMM throughput per GPU",
    "A GPU far below its peers is throttled or faulty: check clocks and cooling, then report it.",
    tier="perf",
)
def gemm(facts: NodeFacts, t: Thresholds) -> Verdict:
    """bf16 GEMM 8192^3 per GPU (torch or CuPy), mean of timed runs after warm-up, against the SKU's threshold
    (DCGM's own GEMM diag missed a GPU at 1/3 throughput: NVIDIA/DCGM #122, so hpclz measures it)."""
    return _per_gpu(facts, t, ("gemm_bf16_tflops",), "TFLOP/s")


@check(
    "HPCLZ-VFY-021",
    "HBM bandwidth per GPU",
    "Low memory bandwidth points at HBM or clock faults: reset the GPU, and report it if it stays low (NHC2021).",
    tier="perf",
    nhc_code="NHC2021",
)
def hbm(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Device-to-device copy bandwidth per GPU, counting bytes read plus written (as baseline-bench.json does)."""
    return _per_gpu(facts, t, ("hbm_copy_tbps",), "TB/s")


@check(
    "HPCLZ-VFY-022",
    "Host<->device bandwidth per GPU",
    "Low host<->GPU bandwidth means a downtrained PCIe link or wrong NUMA binding: check HPCLZ-VFY-008, then report (NHC2020).",
    tier="perf",
    nhc_code="NHC2020",
)
def host_device(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Pinned host-to-device and device-to-host copies per GPU (nvbandwidth *_memcpy_ce when installed, as aznhc
    check_gpu_bw does; else torch/CuPy), against aznhc's 48 GB/s on ND H100/H200 v5."""
    return _per_gpu(facts, t, ("h2d_gbps", "d2h_gbps"), "GB/s")


@check(
    "HPCLZ-VFY-023",
    "DCGM quick diagnostic (dcgmi diag -r 1)",
    "Read the failing DCGM test's message (dcgmi diag -r 1 -v); r2/r3 narrow it down before reporting the node (NHC2020).",
    tier="perf",
    nhc_code="NHC2020",
)
def dcgm_diag(facts: NodeFacts, t: Thresholds) -> Verdict:
    """`dcgmi diag -r 1` (seconds: deployment, persistence, page retirement, InfoROM) when DCGM is installed.
    A run that printed only a runtime_error fails (DCGM is there but could not diagnose the GPUs); one where every
    test was skipped is not measured; a Warn result warns."""
    if facts.dcgm.value is None:
        return Verdict(NOT_MEASURED, f"not measured: {facts.dcgm.why}")
    found: dict[str, Any] = facts.dcgm.value
    failed, warned, passed = found.get("failed") or [], found.get("warned") or [], found.get("passed", 0)
    if found.get("runtime_error"):
        return Verdict(FAIL, f"dcgmi diag could not run: {found['runtime_error']}", None, 0, "tests")
    if failed:
        return Verdict(FAIL, "; ".join(failed + warned), len(failed), 0, "tests")
    if not passed:
        return Verdict(NOT_MEASURED, f"not measured: every DCGM r1 test was skipped ({found.get('skipped', 0)})")
    if warned:
        return Verdict(WARN, "; ".join(warned), len(warned), 0, "tests")
    skipped = f", {found.get('skipped')} skipped" if found.get("skipped") else ""
    return Verdict(PASS, f"{passed} DCGM r1 results passed{skipped}", 0, 0, "tests")


@check(
    "HPCLZ-VFY-024",
    "CPU memory bandwidth (STREAM)",
    "Low STREAM bandwidth on an HB or HX size points at a DIMM, NUMA or BIOS fault: redeploy the VM, and report it to "
    "Azure if it stays low (aznhc NHC2001).",
    tier="perf",
    nhc_code="NHC2001",
)
def stream(facts: NodeFacts, t: Thresholds) -> Verdict:
    """STREAM Copy, Scale, Add and Triad each reach the size's MB/s (aznhc check_cpu_stream: 665500 on HBv4 and
    HX, 320000 on HBv3), and STREAM validated its arrays. On a size with a STREAM threshold a STREAM that could not
    run fails: the size's memory bandwidth is what it is bought for."""
    goal = t.get("stream_mbps")
    if goal is None:
        return no_threshold(t, "stream_mbps")
    if facts.stream.value is None:
        return Verdict(FAIL, f"could not measure: {facts.stream.why}", None, num(goal), "MB/s")
    found: dict[str, Any] = facts.stream.value
    rates: dict[str, float] = found["rates"]
    low = [f"{k} {v:.1f} MB/s" for k, v in rates.items() if v < goal]
    lowest = min(rates.values())
    if not found.get("validated"):
        return Verdict(FAIL, "STREAM did not validate its results", lowest, num(goal), "MB/s")
    if low:
        return Verdict(FAIL, f"{', '.join(low)} < {num(goal)} MB/s", lowest, num(goal), "MB/s")
    return Verdict(PASS, f"slowest kernel {lowest:.1f} MB/s >= {num(goal)} MB/s", lowest, num(goal), "MB/s")


@check(
    "HPCLZ-VFY-025",
    "InfiniBand loopback bandwidth per HCA (ib_write_bw)",
    "A slow HCA loopback points at the HCA, its PCIe link or (GPUDirect) the GPU's: check HPCLZ-VFY-011 and HPCLZ-VFY-008, "
    "reboot, then report the node (aznhc NHC2003).",
    tier="perf",
    nhc_code="NHC2003",
)
def ib_loopback(facts: NodeFacts, t: Thresholds) -> Verdict:
    """ib_write_bw loopback on every InfiniBand HCA, 8 MiB messages: from GPU memory on GPU sizes (aznhc
    check_ib_bw_gdr: 380 Gb/s ND H100 v5, 360 ND H200 v5, 180 ND A100 v4), from host memory on CPU sizes
    (check_ib_bw_non_gdr: 390 HBv4/HX, 190 HBv3). An HCA that could not be measured fails."""
    metric = "ib_write_bw_gdr_gbps" if t.get("ib_write_bw_gdr_gbps") is not None else "ib_write_bw_gbps"
    goal = t.get(metric)
    if goal is None:
        return no_threshold(t, "ib_write_bw_gbps")
    if facts.ib_bandwidth.value is None:
        return Verdict(FAIL, f"could not measure: {facts.ib_bandwidth.why}", None, num(goal), "Gb/s")
    found: dict[str, Any] = facts.ib_bandwidth.value
    per_hca: dict[str, float | None] = found["gbps"]
    fails = [f"{dev} {v:.1f} Gb/s < {num(goal)} Gb/s" for dev, v in per_hca.items() if v is not None and v < goal]
    if found.get("why"):
        fails.append(f"not measured: {found['why']}")
    measured = [v for v in per_hca.values() if v is not None]
    lowest = round(min(measured), 2) if measured else None
    memory = "GPU memory" if found.get("gpu_memory") else "host memory"
    if fails:
        return Verdict(FAIL, "; ".join(fails) + f" ({memory})", lowest, num(goal), "Gb/s")
    shown = f"{len(per_hca)} HCAs, slowest {lowest} Gb/s >= {num(goal)} Gb/s from {memory}"
    return Verdict(PASS, shown, lowest, num(goal), "Gb/s")


P2P_WARN_MARGIN = 1.05  # aznhc warns below 1.05 x its figure and fails below it (azure_gpu_bandwidth.nhc)


@check(
    "HPCLZ-VFY-026",
    "GPU peer-to-peer bandwidth over NVLink (nvbandwidth)",
    "A slow GPU pair points at an NVLink, an NVSwitch or Fabric Manager: check HPCLZ-VFY-007 and "
    "nvidia-fabricmanager, reset the GPUs, then report the node (aznhc NHC2020).",
    tier="perf",
    nhc_code="NHC2020",
)
def p2p_bandwidth(facts: NodeFacts, t: Thresholds) -> Verdict:
    """Copy-engine read bandwidth between every pair of GPUs (`nvbandwidth -t device_to_device_memcpy_read_ce`,
    as aznhc check_gpu_bw runs it; torch peer copies without nvbandwidth) against the conf's second figure: 335
    GB/s on ND H100/H200 v5, 238 on ND A100 v4 80 GB, 235 on 40 GB. Below it fails, below 1.05 x it warns, as
    aznhc does. Like aznhc, only where `nvidia-smi nvlink` lists links: PCIe peers are not held to it."""
    goal = t.get("p2p_gbps")
    if goal is None:
        return no_threshold(t, "p2p_gbps")
    if not facts.nvlinks.value:
        return Verdict(NOT_MEASURED, f"not measured: no NVLink listed ({facts.nvlinks.why or 'no links'})")
    if facts.p2p.value is None:
        return Verdict(FAIL, f"could not measure on a size that requires it: {facts.p2p.why}", None, num(goal), "GB/s")
    found: dict[str, Any] = facts.p2p.value
    pairs: list[list[float]] = found["pairs"]
    arrow = found.get("arrow", "->")
    low = [f"GPU {int(a)} {arrow} GPU {int(b)} {v:.1f} GB/s" for a, b, v in pairs if v < goal]
    near = [
        f"GPU {int(a)} {arrow} GPU {int(b)} {v:.1f} GB/s" for a, b, v in pairs if goal <= v < goal * P2P_WARN_MARGIN
    ]
    slowest = round(min(v for _, _, v in pairs), 3)
    if found.get("error"):
        low.append(f"nvbandwidth stopped: {found['error']}")
    if low:
        return Verdict(FAIL, f"{'; '.join(low)} < {num(goal)} GB/s ({found.get('method')})", slowest, num(goal), "GB/s")
    if near:
        shown = f"{'; '.join(near)}: within 5 % of {num(goal)} GB/s"
        return Verdict(WARN, shown, slowest, num(goal), "GB/s")
    return Verdict(
        PASS, f"{len(pairs)} GPU pairs, slowest {slowest} GB/s >= {num(goal)} GB/s", slowest, num(goal), "GB/s"
    )


NO_RESULT_CODE = "NHCNA"


@check(
    "HPCLZ-VFY-030",
    "Intra-node all-reduce bus bandwidth",
    "Low intra-node busbw points at NVLink/NVSwitch or Fabric Manager: check HPCLZ-VFY-007 and nvidia-fabricmanager (NHC2010).",
    tier="nccl",
    nhc_code="NHC2010",
)
def nccl_intranode(facts: NodeFacts, t: Thresholds) -> Verdict:
    """All-reduce across the node's GPUs at one large size (16 GiB, as aznhc check_nccl_allreduce), busbw =
    2(n-1)/n x algbw, against the SKU threshold (431 GB/s on ND H200 v5, 460 on ND H100 v5). Wrong results fail
    whatever the bandwidth, as aznhc fails any output line containing FAILED (azure_nccl_allreduce.nhc). A run that
    failed before any result is aznhc's NHCNA (a set-up fault, not the GPUs'); one that printed rows and then died of
    a signal is inconclusive."""
    return _allreduce(facts, t, facts.nccl, "nccl_allreduce_busbw_gbps", NO_RESULT_CODE)


def _allreduce(
    facts: NodeFacts, t: Thresholds, reading: Reading[dict[str, Any]], metric: str, no_result_code: str | None = None
) -> Verdict:
    if reading.value is None:
        if f"{INCONCLUSIVE}:" in reading.why:  # it printed, then crashed: no verdict on the GPUs either way
            return inconclusive(f"not measured: {reading.why}")
        verdict = _unmeasured(facts, t, (metric,), reading.why)
        if verdict.status == FAIL:
            verdict.nhc_code = no_result_code
        return verdict
    run: dict[str, Any] = reading.value
    points = run.get("points") or []
    threshold = t.get(metric)
    if not points:
        # The run failed before a result: aznhc codes that NHCNA, not a hardware fault ("nccl_allreduce returned error
        # code N. FaultCode: NHCNA", customTests/azure_nccl_allreduce.nhc @0078044 lines 22-24); NHC2010 is only for
        # wrong results and low bandwidth (lines 50-53, 76).
        message = f"all-reduce produced no result: {run.get('message', '')}"
        return Verdict(FAIL, message, None, threshold, "GB/s", nhc_code=no_result_code)
    top = max(points, key=lambda p: p["size_bytes"])
    busbw = float(top["busbw_gbps"])
    shown = f"busbw {busbw:.1f} GB/s at {top['size_bytes']} bytes over {run.get('ranks')} ranks ({run.get('backend')})"
    if run.get("wrong") or "wrong results" in str(run.get("message", "")):
        return Verdict(FAIL, f"{run.get('message', 'wrong results')} ({shown})", round(busbw, 3), threshold, "GB/s")
    if (one_rank := _one_rank(run, t, shown)) is not None:
        return one_rank
    if threshold is None:
        return Verdict(WARN, f"{shown}; no threshold for SKU {t.sku or 'unknown'}", round(busbw, 3), None, "GB/s")
    status = PASS if busbw >= threshold else FAIL
    return Verdict(status, f"{shown} vs {num(threshold)} GB/s", round(busbw, 3), num(threshold), "GB/s")


def _one_rank(run: dict[str, Any], t: Thresholds, shown: str) -> Verdict | None:
    """One rank moves no data: busbw = 2(n-1)/n x algbw is 0 whatever the speed (nccl-tests doc/PERFORMANCE.md;
    tests/fixtures/gpu/h100/all_reduce_perf.txt, a real one-GPU run, prints busbw 0.00 on every row). On a size
    with one GPU that is nothing to judge; on a size with more, the run missed GPUs, which the threshold fails."""
    if run.get("ranks") == 1 and t.get("gpu_count") == 1:
        return Verdict(NOT_MEASURED, f"not measured: one GPU, nothing to all-reduce between ({shown})")
    return None


@check(
    "HPCLZ-VFY-031",
    "All-reduce through the InfiniBand HCAs alone (IB loopback)",
    "A low loopback all-reduce with NVLink and shared memory off points at an HCA, its GPUDirect path or the "
    "switch port: check HPCLZ-VFY-011 and HPCLZ-VFY-025, then report the node (aznhc NHC2003).",
    tier="nccl",
    nhc_code="NHC2003",
)
def nccl_ib_loopback(facts: NodeFacts, t: Thresholds) -> Verdict:
    """The node's all-reduce with NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1, so every byte leaves through an
    InfiniBand HCA and comes back (aznhc check_nccl_allreduce_ib_loopback: 18 GB/s busbw on ND A100 v4 at the
    size's all-reduce message, 8G on nd96asr_v4, 16G on nd96amsr_a100_v4). Sizes without that figure in aznhc
    are not measured."""
    if t.get("nccl_ib_loopback_busbw_gbps") is None:
        return no_threshold(t, "nccl_ib_loopback_busbw_gbps")
    return _allreduce(facts, t, facts.nccl_ib_loopback, "nccl_ib_loopback_busbw_gbps")


PERF_CHECKS: tuple[CheckSpec, ...] = (
    gemm,
    hbm,
    host_device,
    dcgm_diag,
    stream,
    ib_loopback,
    p2p_bandwidth,
    nccl_intranode,
    nccl_ib_loopback,
)
