"""Performance tier readings per GPU: GEMM TFLOP/s, HBM copy TB/s, pinned host<->device GB/s, DCGM r1.

Measured through torch (else CuPy) the way tests/fixtures/gpu/h200/baseline-bench.json was: mean of 20 timed
runs after 3 warm-ups. nvbandwidth, when installed, replaces the host<->device figures (aznhc uses it).
Without a CUDA device every metric is "not measured: <reason>". Standard library only, except torch/CuPy.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from hpclz.verify.probes import nvsmi
from hpclz.verify.probes.facts import Gpu, Reading
from hpclz.verify.probes.source import Source

GEMM_N = 8192
COPY_BYTES = 1 << 30
WARMUP, TIMED = 3, 20
# Work one timed call does, and the unit's scale: a figure is work / seconds / scale. GEMM counts 2 N^3 flops;
# a device copy counts bytes read plus written, a host<->device copy the bytes moved.
WORK = {
    "gemm_bf16_tflops": (2 * GEMM_N**3, 1e12),
    "hbm_copy_tbps": (2 * COPY_BYTES, 1e12),
    "h2d_gbps": (COPY_BYTES, 1e9),
    "d2h_gbps": (COPY_BYTES, 1e9),
}


def measure(source: Source) -> Reading[dict[str, Any]]:
    """Per-GPU readings as {metric: {"values": [...], "method": ...}}, or why nothing could be measured."""
    if source.simulated:
        out = source.file("perf.json", "")
        if not out.ok or not out.text:
            return Reading(None, f"perf.json: {out.why()}")
        readings = {m: {"values": v, "method": "fixture"} for m, v in json.loads(out.text).items()}
    else:
        found = _measure_torch()
        if isinstance(found, str):
            cupy = _measure_cupy()
            if isinstance(cupy, str):
                return Reading(None, found if "no CUDA" in found else f"{found}; {cupy}")
            found = cupy
        readings = found
    nvb = source.command(
        "nvbandwidth.txt", ["nvbandwidth", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"], 300
    )
    if nvb.ok and nvb.text:
        for metric, values in parse_nvbandwidth(nvb.text).items():
            readings[metric] = {"values": values, "method": "nvbandwidth"}
    return Reading(readings)


LOAD_SETTLE_S = 1.0  # clocks react to load within milliseconds; a second lets power and thermal limits engage


def clocks_under_load(source: Source) -> Reading[list[Gpu]]:
    """`--query-gpu` clock event reasons read while every GPU runs bf16 GEMMs (fixture: query-gpu-load.csv)."""
    query = ["nvidia-smi", f"--query-gpu={nvsmi.QUERY_FIELDS}", "--format=csv"]
    if source.simulated:
        out = source.command("query-gpu-load.csv", query)
        return Reading(nvsmi.parse_csv(out.text)) if out.ok and out.text else Reading(None, out.why())
    try:
        import torch
    except ImportError:
        return Reading(None, "torch not installed: no load to read clocks under")
    if not torch.cuda.is_available():
        return Reading(None, "no CUDA device")
    stop = threading.Event()

    def burn(index: int) -> None:
        dev = torch.device("cuda", index)
        a = torch.randn(GEMM_N // 2, GEMM_N // 2, dtype=torch.bfloat16, device=dev)
        while not stop.is_set():
            for _ in range(20):
                torch.matmul(a, a)
            torch.cuda.synchronize(dev)

    workers = [threading.Thread(target=burn, args=(i,), daemon=True) for i in range(torch.cuda.device_count())]
    for worker in workers:
        worker.start()
    try:
        time.sleep(LOAD_SETTLE_S)
        out = source.command("query-gpu-load.csv", query)
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=30)
    return Reading(nvsmi.parse_csv(out.text)) if out.ok and out.text else Reading(None, out.why())


def _timed(run: Callable[[], object], sync: Callable[[], object]) -> float:
    for _ in range(WARMUP):
        run()
    sync()
    start = time.perf_counter()
    for _ in range(TIMED):
        run()
    sync()
    return (time.perf_counter() - start) / TIMED


def _time_into(
    values: dict[str, list[float]], metric: str, run: Callable[[], object], sync: Callable[[], object]
) -> None:
    work, scale = WORK[metric]
    values[metric].append(work / _timed(run, sync) / scale)


def _readings(values: dict[str, list[float]], method: str) -> dict[str, Any]:
    return {m: {"values": [round(v, 3) for v in vs], "method": method} for m, vs in values.items()}


def _measure_torch() -> dict[str, Any] | str:
    try:
        import torch
    except ImportError:
        return "torch not installed"
    if not torch.cuda.is_available():
        return f"no CUDA device (torch {torch.__version__})"
    values: dict[str, list[float]] = {m: [] for m in WORK}
    for index in range(torch.cuda.device_count()):
        dev = torch.device("cuda", index)
        with torch.cuda.device(dev):

            def sync(d: Any = dev) -> None:
                torch.cuda.synchronize(d)

            a = torch.randn(GEMM_N, GEMM_N, dtype=torch.bfloat16, device=dev)
            b = torch.randn(GEMM_N, GEMM_N, dtype=torch.bfloat16, device=dev)
            _time_into(values, "gemm_bf16_tflops", partial(torch.matmul, a, b), sync)
            del a, b
            src = torch.empty(COPY_BYTES, dtype=torch.uint8, device=dev)
            dst = torch.empty_like(src)
            _time_into(values, "hbm_copy_tbps", partial(dst.copy_, src), sync)
            host = torch.empty(COPY_BYTES, dtype=torch.uint8, pin_memory=True)
            _time_into(values, "h2d_gbps", partial(dst.copy_, host, non_blocking=True), sync)
            _time_into(values, "d2h_gbps", partial(host.copy_, dst, non_blocking=True), sync)
            del src, dst, host
            torch.cuda.empty_cache()
    return _readings(values, f"torch {torch.__version__}")


def _measure_cupy() -> dict[str, Any] | str:
    try:
        import cupy
    except ImportError:
        return "CuPy not installed"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        return f"no CUDA device ({exc})"
    # CuPy has no bfloat16: its GEMM figure is fp16, which the H200 baseline puts within 5 % of bf16.
    values: dict[str, list[float]] = {m: [] for m in WORK}
    for index in range(count):
        with cupy.cuda.Device(index) as device:
            sync = device.synchronize
            a = cupy.random.random((GEMM_N, GEMM_N), dtype=cupy.float32).astype(cupy.float16)
            _time_into(values, "gemm_bf16_tflops", partial(cupy.matmul, a, a), sync)
            src = cupy.empty(COPY_BYTES, dtype=cupy.uint8)
            dst = cupy.empty_like(src)
            _time_into(values, "hbm_copy_tbps", partial(cupy.copyto, dst, src), sync)
            host = cupy.cuda.alloc_pinned_memory(COPY_BYTES)
            _time_into(values, "h2d_gbps", partial(dst.data.copy_from_host, host.ptr, COPY_BYTES), sync)
            _time_into(values, "d2h_gbps", partial(dst.data.copy_to_host, host.ptr, COPY_BYTES), sync)
    return _readings(values, f"CuPy {cupy.__version__}")


_TESTS = {"host_to_device_memcpy_ce": "h2d_gbps", "device_to_host_memcpy_ce": "d2h_gbps"}


def parse_nvbandwidth(text: str) -> dict[str, list[float]]:
    """The CPU row of each `memcpy CE CPU(row) -> GPU(column)` matrix: one figure per GPU, in GB/s."""
    found: dict[str, list[float]] = {}
    for block in re.split(r"^Running ", text, flags=re.MULTILINE)[1:]:
        name = block.split(".", 1)[0].strip()
        if name not in _TESTS:
            continue
        lines = block.splitlines()
        header = next((i for i, line in enumerate(lines) if re.fullmatch(r"\s*(\d+\s+)*\d+\s*", line)), None)
        if header is None or header + 1 >= len(lines):
            continue
        cells = lines[header + 1].split()[1:]
        found[_TESTS[name]] = [float(c) for c in cells if re.fullmatch(r"[\d.]+", c)]
    return found


P2P_TEST = "device_to_device_memcpy_read_ce"  # aznhc check_gpu_bw's P2P test (customTests/azure_gpu_bandwidth.nhc)
_NVB_ABORT = re.compile(r"^\s*(ASSERT .*|Invalid value when checking the pattern.*|Waiving .*)$", re.MULTILINE)


def measure_p2p(source: Source, gpus: int) -> Reading[dict[str, Any]]:
    """Copy-engine reads between every pair of GPUs: `nvbandwidth -t device_to_device_memcpy_read_ce` as aznhc
    runs it, else torch's peer copies. {"pairs": [[row, column, GB/s], ...], "arrow": "->", "method": ...}."""
    out = source.command("nvbandwidth-p2p.txt", ["nvbandwidth", "-t", P2P_TEST], 300)
    if out.text:
        found = parse_nvbandwidth_peers(out.text)
        if found.get("pairs"):
            return Reading({**found, "method": "nvbandwidth"})
        return Reading(None, f"nvbandwidth: {found.get('error') or out.why()}")
    if source.simulated:
        return Reading(None, f"nvbandwidth-p2p.txt: {out.why()}")
    if gpus < 2:
        return Reading(None, f"{gpus} GPU: no peer to copy from")
    torch_pairs = _p2p_torch()
    return Reading(None, torch_pairs) if isinstance(torch_pairs, str) else Reading(torch_pairs)


def parse_nvbandwidth_peers(text: str) -> dict[str, Any]:
    """The GPU x GPU matrix nvbandwidth prints for device_to_device_memcpy_read_ce (`N/A` on the diagonal), or
    the error it stopped with (its data check's ASSERT, or "Waiving" when peers cannot map each other)."""
    block = text.split(f"Running {P2P_TEST}", 1)
    body = block[1] if len(block) == 2 else text
    header = re.search(r"memcpy CE GPU\(row\)\s*(<-|->)\s*GPU\(column\)", body)
    abort = _NVB_ABORT.search(text)
    if header is None:
        return {"pairs": [], "error": abort.group(1).strip() if abort else f"no {P2P_TEST} matrix in the output"}
    pairs: list[list[float]] = []
    columns: list[int] = []
    for line in body[header.end() :].splitlines()[1:]:
        cells = line.split()
        if not columns and cells and all(c.isdigit() for c in cells):
            columns = [int(c) for c in cells]
            continue
        if not cells or not cells[0].isdigit() or not columns:
            if pairs:
                break
            continue
        row = int(cells[0])
        for col, cell in zip(columns, cells[1:], strict=False):
            if re.fullmatch(r"[\d.]+", cell):
                pairs.append([row, col, float(cell)])
    return {"pairs": pairs, "arrow": header.group(1), "error": abort.group(1).strip() if abort else None}


def _p2p_torch() -> dict[str, Any] | str:
    try:
        import torch
    except ImportError:
        return "nvbandwidth not installed and torch not installed"
    if not torch.cuda.is_available():
        return f"no CUDA device (torch {torch.__version__})"
    count = torch.cuda.device_count()
    pairs: list[list[float]] = []
    for target in range(count):
        dev = torch.device("cuda", target)
        dst = torch.empty(COPY_BYTES, dtype=torch.uint8, device=dev)
        for peer in range(count):
            if peer == target or not torch.cuda.can_device_access_peer(target, peer):
                continue
            src = torch.empty(COPY_BYTES, dtype=torch.uint8, device=torch.device("cuda", peer))

            def sync(d: Any = dev) -> None:
                torch.cuda.synchronize(d)

            # A read as nvbandwidth's: the copy runs in the target's context, from the peer's memory.
            with torch.cuda.device(dev):
                seconds = _timed(partial(dst.copy_, src, non_blocking=True), sync)
            pairs.append([peer, target, round(COPY_BYTES / seconds / 1e9, 3)])
            del src
        del dst
        torch.cuda.empty_cache()
    return {"pairs": pairs, "arrow": "->", "method": f"torch {torch.__version__}"}


def dcgm_diag(source: Source) -> Reading[dict[str, Any]]:
    """What `dcgmi diag -r 1 --json` found (dcgm_summary), or why DCGM did not run."""
    out = source.command("dcgmi-diag.json", ["dcgmi", "diag", "-r", "1", "--json"], 180)
    if out.text is None:
        return Reading(None, f"dcgmi: {out.why()}")
    try:
        data = json.loads(out.text[out.text.find("{") :] if "{" in out.text else out.text)
    except json.JSONDecodeError:
        return Reading(None, f"dcgmi printed no JSON (exit status {out.rc})")
    return Reading(dcgm_summary(data))


def _words(info: Any) -> str:
    """DCGM puts messages in strings, lists of strings, or lists of {"warning": ...} objects."""
    if isinstance(info, str):
        return info
    if isinstance(info, dict):
        return str(info.get("warning") or info.get("message") or json.dumps(info))
    if isinstance(info, list):
        return "; ".join(_words(i) for i in info)
    return str(info)


# Result statuses: dcgmi prints "Pass", "Skip", "Fail" (and "Warn" where the version shows it); nvvs's own JSON
# says PASS|FAIL|WARN|SKIPPED (NVIDIA/DCGM dcgmi/Diag.cpp, nvvs/src/JsonOutput.cpp; aznhc-facts.md §6).
_DCGM_STATUS = {"pass": "passed", "fail": "failed", "warn": "warned", "warning": "warned", "skip": "skipped",
                "skipped": "skipped", "not run": "skipped"}  # fmt: skip


def dcgm_summary(data: Any) -> dict[str, Any]:
    """Count DCGM's results by status in every layout (2.x/3.x test_categories, 4.x tests) and keep its
    top-level runtime_error: a diag that could not run, or skipped everything, has passed nothing."""
    summary: dict[str, Any] = {"passed": 0, "skipped": 0, "failed": [], "warned": [], "runtime_error": None}

    def record(test: str, result: dict[str, Any]) -> None:
        kind = _DCGM_STATUS.get(str(result.get("status", "")).strip().lower(), "failed")
        if kind in ("passed", "skipped"):
            summary[kind] += 1
            return
        entity = result.get("gpu_id", result.get("gpu_ids", result.get("entity_id")))
        where = f" {result.get('entity_group') or 'GPU'} {entity}" if entity not in (None, "") else ""
        detail = _words(result.get("warnings") or result.get("info") or "")
        summary[kind].append(f"{test}{where}: {detail}".strip().rstrip(":"))

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("runtime_error"), str) and summary["runtime_error"] is None:
                summary["runtime_error"] = node["runtime_error"]
            if str(node.get("Overall Result", "")).lower() == "fail":  # --iterations: a run that aborted
                summary["failed"].append(f"Overall Result: {_words(node.get('warning') or 'Fail')}")
            results = node.get("results")
            if isinstance(results, list) and "name" in node:
                for r in results:
                    if isinstance(r, dict):
                        record(str(node["name"]), r)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(data)
    return summary


def dcgm_failures(data: Any) -> list[str]:
    """The failed tests alone, "<test> GPU <n>: <message>"."""
    failed: list[str] = dcgm_summary(data)["failed"]
    return failed
