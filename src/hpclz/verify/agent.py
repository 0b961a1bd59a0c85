"""The node agent: read this node, run the HPCLZ-VFY checks, print a NodeReport as JSON.

Standard library only (python3 on a bare GPU node is enough): run it as `python3 -m hpclz.verify.agent`,
or copy the single-file bundle made by `python -m hpclz.verify.bundle agent.pyz` and run `python3 agent.pyz`.

    python3 -m hpclz.verify.agent [--sku Standard_ND96isr_H200_v5] [--tier health|perf] [--nccl]
                                  [--fixtures DIR] [--set metric=value ...] [--json FILE] [--nhc]

Tiers: `health` (default) reads drivers, logs and sysfs only and finishes in seconds, fit for Slurm's
HealthCheckProgram (killed after 60 s); `perf` adds GEMM/HBM/host<->device/DCGM r1; `--nccl` adds the
intra-node all-reduce. `--nhc` prints nothing and exits 0 when healthy, else prints one line
`NHC: hpclz <ID> <reason>` (the prefix NHC's node-mark-online relies on) and exits 1.
Otherwise the exit status is 0, or 6 (ExitCode.VERIFY_FAILED) when a check fails.
Fixtures (`--fixtures DIR` or HPCLZ_VERIFY_FIXTURES) replace every command: see hpclz.verify.probes.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from hpclz.errors import ExitCode
from hpclz.verify import nccl, perf
from hpclz.verify.checks import checks_for
from hpclz.verify.checks.core import FAIL
from hpclz.verify.probes import bench, collect_facts, detect_sku
from hpclz.verify.probes.facts import NodeFacts
from hpclz.verify.probes.source import DEFAULT_TIMEOUT_S, Source
from hpclz.verify.thresholds import Thresholds, load_thresholds

FIXTURES_ENV = "HPCLZ_VERIFY_FIXTURES"
SKU_ENV = "HPCLZ_VERIFY_SKU"
# Slurm kills HealthCheckProgram after 60 s: with --nhc even a node where every probe hangs answers in time
# (nvidia-smi 1.5 x 8 s, then dmesg, journalctl and ibstat 8 s each; nvlink is skipped when nvidia-smi hangs).
NHC_TIMEOUT_S = 8.0


def gather(source: Source, thresholds: Thresholds, *, tier: str, with_nccl: bool) -> NodeFacts:
    facts = collect_facts(source, thresholds.sku, want_nvlink=bool(thresholds.get("nvlink_links_per_gpu")))
    if tier == "perf":
        facts.perf = perf.measure(source)
        if facts.nvsmi.responsive:
            facts.clocks_under_load = perf.clocks_under_load(source)
        facts.dcgm = perf.dcgm_diag(source)
        if thresholds.get("p2p_gbps") is not None and facts.nvsmi.gpus:
            facts.p2p = perf.measure_p2p(source, len(facts.nvsmi.gpus))
        _cpu_and_fabric_benchmarks(source, thresholds, facts)
    if with_nccl:
        size = int(thresholds.get("nccl_allreduce_bytes") or nccl.INTRANODE_SIZE)
        facts.nccl = nccl.intranode(source, len(facts.nvsmi.gpus), thresholds.get("nccl_allreduce_busbw_gbps"), size)
        loopback = thresholds.get("nccl_ib_loopback_busbw_gbps")
        if loopback is not None:
            facts.nccl_ib_loopback = nccl.ib_loopback(source, len(facts.nvsmi.gpus), loopback, size)
    return facts


def _cpu_and_fabric_benchmarks(source: Source, thresholds: Thresholds, facts: NodeFacts) -> None:
    """STREAM and the ib_write_bw loopbacks, only on sizes whose thresholds ask for them (minutes on HB sizes)."""
    if thresholds.get("stream_mbps") is not None:
        facts.stream = bench.read_stream(source)
    gdr = thresholds.get("ib_write_bw_gdr_gbps") is not None
    if gdr or thresholds.get("ib_write_bw_gbps") is not None:
        ports = facts.ib_ports.value or []
        devices = sorted({p.device for p in ports if p.link_layer.lower() == "infiniband"})
        facts.ib_bandwidth = bench.read_ib_write_bw(source, devices, gpu_memory=gdr)


def run_agent(
    *,
    fixtures: Path | None = None,
    sku: str | None = None,
    tier: str = "health",
    with_nccl: bool = False,
    overrides: dict[str, float] | None = None,
    node: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """A NodeReport as a plain dict (hpclz.verify.model.NodeReport validates it)."""
    started = time.monotonic()
    source = Source(fixtures, node, timeout_s)
    sku = sku or detect_sku(source)
    thresholds = load_thresholds(sku, overrides)
    facts = gather(source, thresholds, tier=tier, with_nccl=with_nccl)
    tiers = ["health", *(["perf"] if tier == "perf" else []), *(["nccl"] if with_nccl else [])]
    outcomes = [spec.run(facts, thresholds).as_dict() for spec in checks_for(set(tiers))]
    report: dict[str, Any] = {
        "node": source.node,
        "sku": thresholds.sku,
        "hostname": socket.gethostname(),
        "tier": "+".join(tiers),
        "duration_s": round(time.monotonic() - started, 3),
        "checks": outcomes,
        # What a Guest Health Report names: the physical host, and each GPU by serial and PCIe location.
        "physical_host": facts.physical_host.value,
        "gpus": [
            {"index": g.index, "bus_id": g.bus_id, "name": g.name, "serial": g.serial, "uuid": g.uuid}
            for g in facts.nvsmi.gpus
        ],
    }
    if facts.nccl.value is not None:
        report["collective"] = facts.nccl.value
    return report


def nhc_line(report: dict[str, Any]) -> str:
    """One line for NHC/Slurm drain reasons: the first failure and how many more."""
    failed = [c for c in report["checks"] if c["status"] == FAIL]
    if not failed:
        return ""
    first = failed[0]
    more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
    return f"NHC: hpclz {first['check_id']} {first['message']}{more}".replace("\n", " ")[:400]


def _overrides(pairs: list[str]) -> dict[str, float]:
    found = {}
    for pair in pairs:
        metric, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--set {pair!r}: expected metric=value")
        found[metric.strip()] = float(value)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hpclz-verify-agent", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sku",
        default=os.environ.get(SKU_ENV) or None,
        help=f"VM size; default: ${SKU_ENV}, else Azure IMDS, or vm-size.txt in the fixtures",
    )
    parser.add_argument("--tier", choices=["health", "perf"], default="health")
    parser.add_argument("--nccl", action="store_true", help="also run the intra-node all-reduce")
    parser.add_argument("--fixtures", type=Path, default=os.environ.get(FIXTURES_ENV) or None)
    parser.add_argument("--node", help="node name (default: SLURMD_NODENAME, else the short hostname)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="METRIC=VALUE")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"seconds per external command (default {DEFAULT_TIMEOUT_S:g}; {NHC_TIMEOUT_S:g} with --nhc)",
    )
    parser.add_argument("--json", dest="json_out", default="-", help="file for the report ('-' = stdout)")
    parser.add_argument("--nhc", action="store_true", help="exit-code mode for NHC / HealthCheckProgram")
    args = parser.parse_args(argv)
    try:
        report = run_agent(
            fixtures=Path(args.fixtures) if args.fixtures else None,
            sku=args.sku,
            tier=args.tier,
            with_nccl=args.nccl,
            overrides=_overrides(args.overrides),
            node=args.node,
            timeout_s=args.timeout or (NHC_TIMEOUT_S if args.nhc else DEFAULT_TIMEOUT_S),
        )
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    failed = any(c["status"] == FAIL for c in report["checks"])
    if args.nhc:
        if failed:
            print(nhc_line(report))
        return 1 if failed else 0
    text = json.dumps(report, indent=2)
    if args.json_out == "-":
        print(text)
    else:
        Path(args.json_out).write_text(text + "\n")
    return int(ExitCode.VERIFY_FAILED) if failed else 0


if __name__ == "__main__":
    sys.exit(main())
