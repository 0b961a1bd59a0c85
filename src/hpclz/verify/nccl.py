"""All-reduce bus bandwidth: the nccl-tests formula, its output parser, and a torch.distributed runner.

busbw = algbw x 2(n-1)/n for all-reduce (nccl-tests doc/PERFORMANCE.md); algbw = bytes / time, in GB/s (1e9).
Run across ranks as `python -m hpclz.verify.nccl --backend nccl|gloo --sizes 1G,16G --json OUT`; ranks come
from RANK/WORLD_SIZE/LOCAL_RANK or SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID, the rendezvous from MASTER_ADDR/
MASTER_PORT (under Slurm: the job's first node and a port derived from the job id). Rank 0 writes the JSON,
a dict shaped like hpclz.verify.model.CollectiveResult. Standard library only, except torch when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpclz.verify.probes.facts import Reading
from hpclz.verify.probes.source import Source

INTRANODE_SIZE = 16 * 2**30  # aznhc check_nccl_allreduce ... 16G: small sizes never reach peak (nccl-tests #212)
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def bus_factor(ranks: int) -> float:
    return 2 * (ranks - 1) / ranks if ranks > 0 else 0.0


def busbw(algbw_gbps: float, ranks: int) -> float:
    return algbw_gbps * bus_factor(ranks)


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text.upper())
    if not m:
        raise ValueError(f"bad message size {text!r}: use bytes or K/M/G, e.g. 16G")
    return int(m.group(1)) * _UNITS[m.group(2)]


def point(size_bytes: int, seconds: float, ranks: int) -> dict[str, float | int]:
    algbw = size_bytes / seconds / 1e9
    return {
        "size_bytes": size_bytes,
        "time_us": round(seconds * 1e6, 3),
        "algbw_gbps": round(algbw, 6),
        "busbw_gbps": round(busbw(algbw, ranks), 6),
    }


def result(
    name: str,
    nodes: list[str],
    backend: str,
    ranks: int,
    points: list[dict[str, Any]],
    threshold: float | None,
    note: str = "",
) -> dict[str, Any]:
    """A CollectiveResult-shaped dict; the verdict uses the largest size, since the average of a sweep hides faults."""
    status, message = "warn", "measured; no busbw threshold given"
    if not points:
        status, message = "fail", note or "no measurement"
    elif threshold is not None:
        top = max(points, key=lambda p: p["size_bytes"])
        ok = top["busbw_gbps"] >= threshold
        status = "pass" if ok else "fail"
        message = (
            f"busbw {top['busbw_gbps']:.1f} GB/s at {top['size_bytes']} bytes {'>=' if ok else '<'} {threshold:g} GB/s"
        )
    if note and points:
        message = f"{message}; {note}"
    return {
        "name": name,
        "nodes": nodes,
        "backend": backend,
        "ranks": ranks,
        "points": points,
        "threshold_busbw_gbps": threshold,
        "status": status,
        "message": message,
    }


# Lines as launchers prefix them: Open MPI --tag-output "[1,0]<stdout>:" (optionally after a --timestamp-output
# date, as in openucx/ucx#5626), MPICH/Intel MPI -prepend-rank "[0] " (NVIDIA/nccl#1453), srun --label "0: ".
_PREFIX = re.compile(r"^(?:.*?\[\d+,\d+\]<std(?:out|err)>:\s?|\[\d+\]\s|\s*\d+:\s)")
# One number as nccl-tests prints it: getFloatStr falls back from %.2f to %.1f, %.0f and %.1e when a value does
# not fit its column (NVIDIA/nccl-tests src/util.cu getFloatStr), so a 30 s time reads "3.0e+07".
_NUM = r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
_ROW = re.compile(
    rf"^\s*(\d+)\s+(\d+)\s+([a-z0-9_]+)\s+([a-z]+)\s+(?:(-?\d+)\s+)?({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM}|N/A)(?:\s|$)"
)
_OUT_OF_BOUNDS = re.compile(r"Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)")


def _wrong_count(cell: str, counts: bool) -> int:
    """The #wrong cell: a count printed with %g since nccl-tests 51af557 (2022-08, "Resync with NCCL 2.13"; 1234567 reads "1.23457e+06"); before
    that the column was "error", the largest deviation (%5.0le, "2e-07"), which counts nothing."""
    if not counts or cell == "N/A":
        return 0
    return round(float(cell))


def parse_all_reduce_perf(text: str) -> dict[str, Any]:
    """nccl-tests all_reduce_perf text output in the old ("error") and new ("#wrong") layouts, with or without
    launcher prefixes: out-of-place rows, rank count, wrong elements, the out-of-bounds verdict, footer average."""
    lines = [_PREFIX.sub("", line, count=1) for line in text.splitlines()]
    counts = not any(re.search(r"busbw\s+error\b", line) for line in lines)
    points = []
    wrong = 0
    for line in lines:
        m = _ROW.match(line)
        if m:
            size, time_us, algbw, bus = int(m.group(1)), float(m.group(6)), float(m.group(7)), float(m.group(8))
            points.append({"size_bytes": size, "time_us": time_us, "algbw_gbps": algbw, "busbw_gbps": bus})
            wrong += _wrong_count(m.group(9), counts)
    ranks = len([line for line in lines if re.match(r"^#\s+Rank\s+\d+", line)])
    avg = next(
        (re.search(r"#\s*Avg bus bandwidth\s*:\s*([\d.eE+-]+)", line) for line in lines if "Avg bus" in line), None
    )
    verdicts = [m for m in map(_OUT_OF_BOUNDS.search, lines) if m]
    failed_tests = sum(int(m.group(1)) for m in verdicts if m.group(2) == "FAILED")
    return {
        "points": points,
        "ranks": ranks,
        "wrong": wrong,
        "out_of_bounds": failed_tests,
        "avg_busbw_gbps": float(avg.group(1)) if avg else None,
    }


def _env_rank() -> tuple[int, int, int]:
    env = os.environ
    rank = int(env.get("RANK", env.get("SLURM_PROCID", "0")))
    world = int(env.get("WORLD_SIZE", env.get("SLURM_NTASKS", "1")))
    local = int(env.get("LOCAL_RANK", env.get("SLURM_LOCALID", "0")))
    return rank, world, local


def _rendezvous() -> None:
    """Fill MASTER_ADDR/MASTER_PORT from Slurm when the launcher did not set them."""
    if "MASTER_ADDR" not in os.environ:
        first = "127.0.0.1"
        nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
        scontrol = shutil.which("scontrol")
        if nodelist and scontrol:
            done = subprocess.run(
                [scontrol, "show", "hostnames", nodelist], capture_output=True, text=True, timeout=20, check=False
            )
            first = (done.stdout.split() or [first])[0]
        os.environ["MASTER_ADDR"] = first
    if "MASTER_PORT" not in os.environ:
        os.environ["MASTER_PORT"] = str(29500 + int(os.environ.get("SLURM_JOB_ID", "0")) % 20000)


def run_allreduce(
    sizes: list[int],
    backend: str = "nccl",
    *,
    iters: int = 20,
    warmup: int = 5,
    name: str = "allreduce",
    threshold: float | None = None,
    timeout_s: float | None = None,
    each_iteration: Callable[[], None] | None = None,
) -> dict[str, Any] | None:
    """Time all-reduce at each size in the current process group (initialised from the environment if need be,
    with `timeout_s` for its collectives).

    Returns the CollectiveResult-shaped dict on rank 0 and None elsewhere. Time per size is the slowest rank's
    mean over `iters` calls after `warmup`, as nccl-tests reports it. `each_iteration` runs before every timed
    call, inside the timing: a fault-injection hook (hpclz.verify.collective_job's throttle), never a product knob.
    """
    import datetime

    import torch
    import torch.distributed as dist

    env_rank, env_world, local = _env_rank()
    owned = not dist.is_initialized()
    if owned:
        _rendezvous()
        limit = datetime.timedelta(seconds=timeout_s) if timeout_s else None  # None: torch's default
        dist.init_process_group(backend=backend, rank=env_rank, world_size=env_world, timeout=limit)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", local) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    try:
        hosts = _gather_hosts(torch, dist, world, device)
        points = []
        for size in sizes:
            buf = torch.ones(max(size // 4, 1), dtype=torch.float32, device=device)
            for _ in range(warmup):
                dist.all_reduce(buf)
            sync()
            dist.barrier()
            started = time.perf_counter()
            for _ in range(iters):
                if each_iteration is not None:
                    each_iteration()
                dist.all_reduce(buf)
            sync()
            elapsed = torch.tensor([(time.perf_counter() - started) / iters], dtype=torch.float64, device=device)
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
            points.append(point(buf.numel() * 4, float(elapsed.item()), world))
            del buf
        if rank != 0:
            return None
        return result(name, sorted(set(hosts)), backend, world, points, threshold)
    finally:
        if owned:
            dist.destroy_process_group()


def _gather_hosts(torch: Any, dist: Any, world: int, device: Any) -> list[str]:
    # all_gather_object needs numpy, which a node's python may lack: gather fixed-width bytes instead.
    raw = socket.gethostname().encode()[:255].ljust(256, b"\0")
    mine = torch.tensor(list(raw), dtype=torch.uint8, device=device)
    everyone = [torch.zeros(256, dtype=torch.uint8, device=device) for _ in range(world)]
    dist.all_gather(everyone, mine)
    return [bytes(t.cpu().tolist()).rstrip(b"\0").decode(errors="replace") for t in everyone]


def intranode(
    source: Source,
    gpus: int,
    threshold: float | None,
    size: int = INTRANODE_SIZE,
    *,
    fixture: str = "all_reduce_perf.txt",
    env: dict[str, str] | None = None,
) -> Reading[dict[str, Any]]:
    """One node's all-reduce over its GPUs: nccl-tests when installed (as on Azure HPC images), else torch+NCCL."""
    out = source.command(
        fixture,
        ["all_reduce_perf", "-b", str(size), "-e", str(size), "-f", "2", "-g", str(max(gpus, 1)), "-c", "1"],
        timeout_s=600,
        env=env,
    )
    if out.ok and out.text:
        parsed = parse_all_reduce_perf(out.text)
        note = wrong_results(parsed)
        run = result(
            "intranode", [source.node], "nccl-tests", parsed["ranks"] or gpus, parsed["points"], threshold, note
        )
        run["wrong"] = parsed["wrong"] or parsed["out_of_bounds"]
        if note:
            run["status"] = "fail"
        return Reading(run)
    if source.simulated:
        return Reading(None, f"{fixture.removesuffix('.txt')}: {out.why()}")
    return _torch_intranode(source.node, gpus, threshold, size, out.why(), env)


# aznhc's check_nccl_allreduce_ib_loopback (customTests/azure_nccl_allreduce_ib_loopback.nhc): with NVLink (P2P)
# and shared memory off, NCCL's only path between the node's GPUs is its InfiniBand HCAs, through the switch
# and back; NET_GDR_LEVEL=5 (SYS) lets every GPU use GPUDirect RDMA whatever its distance to the HCA.
IB_LOOPBACK_ENV = {
    "NCCL_P2P_DISABLE": "1",
    "NCCL_SHM_DISABLE": "1",
    "NCCL_NET_GDR_LEVEL": "5",
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
}


def ib_loopback(
    source: Source, gpus: int, threshold: float | None, size: int = INTRANODE_SIZE
) -> Reading[dict[str, Any]]:
    """The node's all-reduce forced through its InfiniBand HCAs (fixture: all_reduce_perf-ib-loopback.txt)."""
    reading = intranode(
        source, gpus, threshold, size, fixture="all_reduce_perf-ib-loopback.txt", env=dict(IB_LOOPBACK_ENV)
    )
    if isinstance(reading.value, dict):
        reading.value["name"] = "intranode-ib-loopback"
    return reading


def wrong_results(parsed: dict[str, Any]) -> str:
    """Why the output is wrong whatever its bandwidth: nccl-tests checked the data (-c 1) and found bad values."""
    parts = []
    if parsed["wrong"]:
        parts.append(f"{parsed['wrong']} wrong elements")
    if parsed["out_of_bounds"]:
        parts.append(f"Out of bounds values : {parsed['out_of_bounds']} FAILED")
    return "wrong results: " + ", ".join(parts) if parts else ""


def _torch_intranode(
    node: str, gpus: int, threshold: float | None, size: int, why_not_tests: str, env: dict[str, str] | None = None
) -> Reading[dict[str, Any]]:
    try:
        import torch
    except ImportError:
        return Reading(None, f"all_reduce_perf unavailable ({why_not_tests}) and torch not installed")
    if not torch.cuda.is_available():
        return Reading(None, "no CUDA device")
    # The GPUs nvidia-smi listed, as nccl-tests' -g gets them; CUDA may see fewer (CUDA_VISIBLE_DEVICES).
    ranks = min(gpus, torch.cuda.device_count()) if gpus else torch.cuda.device_count()
    if ranks < 2:
        return Reading(None, f"{ranks} GPU: an all-reduce needs 2 or more")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "allreduce.json"
        launch = spawn_local(ranks, "nccl", [size], out, name="intranode", threshold=threshold, env=env)
        if launch:
            return Reading(None, launch)
        run = json.loads(out.read_text())
        run["nodes"] = [node]
        return Reading(run)


def spawn_local(
    ranks: int,
    backend: str,
    sizes: list[int],
    out: Path,
    *,
    name: str,
    threshold: float | None,
    timeout_s: float = 600,
    iters: int = 20,
    warmup: int = 5,
    env: dict[str, str] | None = None,
) -> str:
    """Start RANKS local processes of this module on a free port; return '' on success, else why not."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cmd = [sys.executable, "-m", "hpclz.verify.nccl", "--backend", backend, "--json", str(out), "--name", name]
    cmd += ["--sizes", ",".join(map(str, sizes)), "--iters", str(iters), "--warmup", str(warmup)]
    if threshold is not None:
        cmd += ["--threshold", str(threshold)]
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    base.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(ranks), **(env or {}))
    # The ranks import this module by name: make hpclz importable even from the single-file bundle.
    home = str(Path(__file__).resolve().parents[2])
    base["PYTHONPATH"] = os.pathsep.join(p for p in (home, base.get("PYTHONPATH", "")) if p)
    procs = [
        subprocess.Popen(
            cmd,
            env={**base, "RANK": str(r), "LOCAL_RANK": str(r)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(ranks)
    ]
    failures = []
    for r, proc in enumerate(procs):
        try:
            text, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            return f"all-reduce ranks did not finish within {timeout_s:g} s"
        if proc.returncode:
            failures.append(f"rank {r} exited {proc.returncode}: {(text.strip().splitlines() or [''])[-1]}")
    return "; ".join(failures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hpclz.verify.nccl", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    parser.add_argument("--sizes", default="1G,16G", help="comma-separated message sizes, bytes or K/M/G")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--name", default="allreduce")
    parser.add_argument("--threshold", type=float, default=None, help="busbw GB/s the largest size must reach")
    parser.add_argument("--json", dest="json_out", default="-", help="file for rank 0's result ('-' = stdout)")
    args = parser.parse_args(argv)
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError as exc:
        parser.error(str(exc))
    run = run_allreduce(
        sizes, args.backend, iters=args.iters, warmup=args.warmup, name=args.name, threshold=args.threshold
    )
    if run is not None:
        text = json.dumps(run, indent=2)
        if args.json_out == "-":
            print(text)
        else:
            Path(args.json_out).write_text(text + "\n")
        return 0 if run["status"] != "fail" else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
