"""CPU memory bandwidth (STREAM) and InfiniBand loopback bandwidth (perftest ib_write_bw), as aznhc measures them.

STREAM: McCalpin's stream.c, the `stream` binary on PATH (aznhc builds it with -DSTREAM_ARRAY_SIZE=400000000,
customTests/stream/Makefile); its table gives Best Rate MB/s per kernel. ib_write_bw: a loopback on each HCA, the
server and the client on the same device (aznhc customTests/azure_ib_write_bw_{gdr,non_gdr}.nhc), 8 MiB messages,
GPU memory of GPU i for HCA i on GPU sizes (`--use_cuda`). Standard library only.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from typing import Any

from hpclz.verify.probes.facts import Reading
from hpclz.verify.probes.source import Source

STREAM_KERNELS = ("Copy", "Scale", "Add", "Triad")
IB_MESSAGE_BYTES = 8 * 2**20  # aznhc check_ib_bw_gdr: ib_write_bw -s 8388608
IB_BASE_PORT = 18510  # aznhc: -p 18510+i, so the HCAs' loopbacks do not meet
# perftest src/perftest_parameters.c: MB/sec divides bytes by 0x100000, Gb/sec by 125000000.
_MIB_PER_S_TO_GBPS = 0x100000 / 125_000_000


def parse_stream(text: str) -> dict[str, object]:
    """Best Rate MB/s of each kernel, whether STREAM validated its arrays, and the threads it counted."""
    rates = {}
    for kernel in STREAM_KERNELS:
        m = re.search(rf"^{kernel}:\s+([\d.]+)\s", text, re.MULTILINE)
        if m:
            rates[kernel] = float(m.group(1))
    threads = re.search(r"Number of Threads counted\s*=\s*(\d+)", text)
    return {
        "rates": rates,
        "validated": "Solution Validates" in text,
        "threads": int(threads.group(1)) if threads else None,
    }


def read_stream(source: Source) -> Reading[dict[str, Any]]:
    out = source.command("stream.txt", ["stream"], timeout_s=600)
    if out.text is None:
        return Reading(None, f"STREAM: {out.why()}")
    parsed = parse_stream(out.text)
    if not parsed["rates"]:
        return Reading(None, f"STREAM printed no result table ({out.why()})")
    return Reading(parsed)


def parse_ib_write_bw(text: str) -> float | None:
    """BW average of the last result row, in Gb/s, whether perftest printed Gb/sec (--report_gbits) or MB/sec."""
    unit, value = None, None
    for line in text.splitlines():
        header = re.search(r"BW average\[(Gb|MB)/sec\]", line)
        if header:
            unit = header.group(1)
            continue
        row = re.match(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if unit and row:
            average = float(row.group(4))
            value = average if unit == "Gb" else average * _MIB_PER_S_TO_GBPS
    return value


def read_ib_write_bw(source: Source, devices: list[str], gpu_memory: bool) -> Reading[dict[str, Any]]:
    """Loopback Gb/s per HCA ({device: Gb/s or None}) and why any could not be measured."""
    found: dict[str, float | None] = {}
    why: list[str] = []
    for index, device in enumerate(devices):
        text, problem = _loopback(source, device, index, gpu_memory)
        found[device] = parse_ib_write_bw(text) if text else None
        if found[device] is None:
            why.append(f"{device}: {problem or 'no result row'}")
    if not found:
        return Reading(None, "no InfiniBand HCA to test")
    return Reading({"gbps": found, "why": "; ".join(why), "gpu_memory": gpu_memory})


def _loopback(source: Source, device: str, index: int, gpu_memory: bool) -> tuple[str | None, str]:
    if source.simulated:
        out = source.command(f"ib_write_bw-{device}.txt", ["ib_write_bw"])
        return out.text, out.why()
    exe = shutil.which("ib_write_bw")
    if exe is None:
        return None, "not installed: ib_write_bw not on PATH (Debian/Ubuntu package perftest)"
    args = [exe, "-d", device, "-p", str(IB_BASE_PORT + index), "-s", str(IB_MESSAGE_BYTES)]
    args += ["-x", "0", "-F", "--report_gbits", "-D", "5", "--perform_warm_up"]
    if gpu_memory:
        args.append(f"--use_cuda={index}")
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)  # the server must listen before the client connects (aznhc waits 5 s)
        done = subprocess.run([*args, "localhost"], capture_output=True, text=True, timeout=60, check=False)
        return done.stdout, f"exit status {done.returncode}: {done.stderr.strip()[-200:]}"
    except subprocess.TimeoutExpired:
        return None, "timed out after 60 s"
    finally:
        server.kill()
        server.wait()
