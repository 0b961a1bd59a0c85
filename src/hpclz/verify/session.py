"""`hpclz verify` after its config loaded: node checks on every node through Slurm (here, on the scheduler through
Run Command, or --local on this machine), optional collectives, drain and resume.

Order of a run: pick the nodes (partitions from --partition or the config, --nodes), run the node agent
on all of them at once (nodes hpclz drained before are re-tested inside a maintenance reservation so
no user job lands on them meanwhile), drain what failed and resume what hpclz drained and now passes,
then with --nccl the ring pairs and one all-node all-reduce on the nodes that passed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import Field

from hpclz.config.loader import LoadedConfig
from hpclz.config.root import LandingZoneConfig
from hpclz.errors import ExitCode, HpclzError
from hpclz.findings import Finding
from hpclz.output import ResultBody
from hpclz.rules.base import run_rules
from hpclz.slurm.client import NodeInfo, SlurmClient, SlurmError
from hpclz.slurm.route import SCHEDULER_PYTHON, azure_explained, through_run_command
from hpclz.verify import collective_job as coll
from hpclz.verify.bundle import COLLECTIVE_COMMAND
from hpclz.verify.dispatch import (
    GRACE_S,
    RESULT_PLACEHOLDER,
    FanOut,
    NodeCode,
    Selection,
    drain_reason,
    fan_out,
    node_code,
    select,
    settle,
)
from hpclz.verify.model import CheckResult, CollectiveResult, NodeReport, Status, VerifyReport, WorkloadReport
from hpclz.verify.report import bad_nodes
from hpclz.verify.thresholds import agent_arguments, load_thresholds, overrides_for

PING_GRACE_S = 5.0
QUEUE_WAIT_S = 300  # how long a job may wait for its nodes (busy with user jobs) before they count as no result
INTERNODE = "internode_allreduce_busbw_gbps"  # the ring pairs' threshold (hpclz.verify.thresholds)
RACK = "rack_allreduce_busbw_gbps"  # one rack's own all-reduce (MNNVL) on rack-scale sizes
MASTER_ADDR_ENV = "HPCLZ_VERIFY_MASTER_ADDR"  # where ranks meet when node names do not resolve (tests)


@dataclass(frozen=True)
class VerifyOptions:
    config: Path
    partition: str | None = None
    nodes: str | None = None
    nccl: bool = False
    drain: bool = False
    local: bool = False
    slurm_conf: Path | None = None
    work_dir: Path | None = None
    # An interpreter with hpclz that every node has (the operator installed it there). None: the node bundle
    # (`bundle`), else this interpreter where a node has it at the same path (hpclz.verify.dispatch.node_code).
    python: str | None = None
    bundle: str | None = None  # the node bundle as the nodes see it; None: the cluster's, under /sched (HealthGate)
    node_budget_s: int | None = None
    max_nodes_per_job: int = 100
    suppress: tuple[str, ...] = ()  # with the config's `suppress:`; verify check IDs apply
    via: str | None = None  # "slurm" here, "run-command" on the scheduler VM; None: here when Slurm is, else there
    scheduler: str | None = None  # the scheduler VM's resource ID (found by CycleCloud's tags when None)
    report_account: str | None = None  # blob account for the remote run's output (default: the blob state's)
    remote_python: str = SCHEDULER_PYTHON  # the scheduler's interpreter with hpclz, for --via run-command
    time_limit_s: int | None = None  # the remote run's limit; derived from the partitions and --nccl when None
    workload: bool = False  # the training proof (hpclz.verify.workload) on the nodes that passed
    workload_engine: str = "megatron"  # megatron (GPUs, pyxis) or cpu (the gloo stand-in, hpclz and torch on nodes)
    workload_data: tuple[Path, ...] = ()  # documents to train on; none: hpclz's own sources
    workload_iters: int = 200
    workload_image: str | None = None  # enroot image reference; None: the pinned NGC PyTorch
    progress: Callable[[str], None] = field(default=lambda _line: None)


class VerifyOutcome(ResultBody):
    report: VerifyReport
    work_dir: str | None = None
    local: bool = False
    findings: list[Finding] = Field(default_factory=list)
    suppressed: list[str] = Field(default_factory=list)

    @property
    def outcome(self) -> str:
        """passed, failed, or (--local only) not_measured: a machine that could not be measured has not passed."""
        if failed_anything(self.report):
            return "failed"
        if self.local and any(node.status is Status.NOT_MEASURED for node in self.report.nodes):
            return "not_measured"
        return "passed"

    def json_body(self) -> dict[str, Any]:
        # The findings go to the envelope's own `findings`, not twice under `result`.
        body = {"work_dir": self.work_dir, "outcome": self.outcome, "suppressed": self.suppressed}
        return {**body, **self.report.model_dump(mode="json")}


def failed_anything(report: VerifyReport) -> bool:
    workload = report.workload is not None and report.workload.status is Status.FAIL
    return bool(report.bad_nodes) or workload or any(c.status is Status.FAIL for c in report.collectives)


def run_verify(loaded: LoadedConfig, opts: VerifyOptions) -> VerifyOutcome:
    """The verify `opts` asks for, judged by the verify rules (hpclz.verify.checks.VERIFY_RULES)."""
    started = time.monotonic()
    config = loaded.config
    silenced = {i.upper() for i in [*config.suppress, *opts.suppress]}
    if opts.local:
        if opts.drain:
            raise HpclzError("--drain needs Slurm; it cannot be combined with --local", exit_code=ExitCode.USAGE)
        from hpclz.verify.local import run_local

        report = run_local(config, nccl=opts.nccl)
        for node in report.nodes:
            node.silence(silenced)
        report.bad_nodes = bad_nodes(report.nodes)
        report.duration_s = round(time.monotonic() - started, 3)
        return judged(VerifyOutcome(report=report, local=True), silenced)
    if opts.workload and opts.workload_engine == "megatron":
        _refuse_workload_without_gpus(config, opts)
    if opts.via == "ssh":
        _through_bastion(opts, loaded)
    if through_run_command(opts.via, opts.scheduler, opts.slurm_conf):
        return judged(_verify_remote(opts, loaded), silenced)
    client = SlurmClient.from_env(opts.slurm_conf)
    work = opts.work_dir or Path(".hpclz") / "verify" / time.strftime(f"%Y%m%dT%H%M%S-{os.getpid()}")
    work = work.resolve()
    infos = _nodes(client, config, opts)
    chosen = select(infos.values(), drain=opts.drain)
    health = _health(client, config, opts, chosen, infos, work)
    for node in [*health.values(), *chosen.skipped.values()]:
        node.silence(silenced)  # before draining: a silenced check drains nothing
    tested = {n: health[n] for n in chosen.runnable + chosen.retest}  # in Slurm's order, as drained lists them
    report = VerifyReport(landing_zone=config.metadata.name)
    if opts.drain:
        report.drained, report.resumed = settle(client, tested, infos, chosen.retest)
    if opts.nccl:
        _collectives(client, config, opts, tested, infos, report, work)
    if opts.workload:
        _workload(client, config, opts, tested, infos, report, work)
    reports = {**chosen.skipped, **tested}
    report.nodes = [reports[n] for n in sorted(reports)]
    for node in report.nodes:
        node.silence(silenced)  # ring-pair outcomes are added after the first pass
    report.bad_nodes = bad_nodes(report.nodes)
    report.duration_s = round(time.monotonic() - started, 3)
    return judged(VerifyOutcome(report=report, work_dir=str(work)), silenced)


def _verify_remote(opts: VerifyOptions, loaded: LoadedConfig) -> VerifyOutcome:
    with azure_explained("verify", opts.via, opts.scheduler):
        return _run_remote(opts, loaded)


def _run_remote(opts: VerifyOptions, loaded: LoadedConfig) -> VerifyOutcome:
    from hpclz.azure.scheduler import compute_group
    from hpclz.verify.remote import RemoteRequest, run_remote

    if opts.workload_data:
        raise HpclzError(
            "--workload-data names files on this machine, which the scheduler cannot read: copy them to the shared "
            "mount and run verify there (--via ssh prints how), or leave it out to train on hpclz's own sources",
            exit_code=ExitCode.USAGE,
        )
    if opts.work_dir is not None and not opts.work_dir.is_absolute():
        raise HpclzError(
            f"--work-dir {opts.work_dir}: with --via run-command it is a folder on the scheduler: give an absolute path",
            exit_code=ExitCode.USAGE,
        )
    request = RemoteRequest(
        verify_args=remote_arguments(opts),
        python=opts.remote_python,
        scheduler=opts.scheduler,
        report_account=opts.report_account,
        timeout_s=opts.time_limit_s or remote_time_limit(loaded.config, opts),
        # --work-dir names the folder on the scheduler's side here; the run's own folder is made inside it.
        work_root=opts.work_dir.as_posix() if opts.work_dir is not None else None,
        progress=opts.progress,
    )
    done = run_remote(loaded, request, compute_group(loaded))
    return VerifyOutcome(report=done.report, work_dir=done.work_dir)


def remote_time_limit(config: LandingZoneConfig, opts: VerifyOptions) -> int:
    """The Run Command's time limit: the worst case of the verify it runs, from the budgets this run would use
    on the scheduler and the size (max_nodes) of each partition it verifies."""
    from hpclz.verify.remote import Workload, time_limit_s

    wanted = [opts.partition] if opts.partition else config.verify.partitions
    parts = [p for p in config.compute.partitions if not wanted or p.name in wanted]
    return time_limit_s(
        Workload(
            node_budget_s=opts.node_budget_s or _default_budget(config),
            collective_budget_s=opts.node_budget_s or config.verify.check_timeout_seconds,
            queue_wait_s=QUEUE_WAIT_S,
            partition_nodes=[p.max_nodes for p in parts],
            nccl=opts.nccl,
            workload_s=[_workload_budget(opts, p.max_nodes) for p in parts] if opts.workload else [],
        )
    )


def _workload_budget(opts: VerifyOptions, nodes: int) -> int:
    from hpclz.verify.workload.chain import budget_s

    return budget_s("standin" if opts.workload_engine == "cpu" else "megatron", nodes)


def remote_arguments(opts: VerifyOptions) -> list[str]:
    """The options that mean the same on the scheduler; the run there is always through its Slurm."""
    args = ["--via", "slurm"]
    # The nodes' interpreter and bundle pass through as given; left out, the scheduler finds its own cluster's bundle.
    args += [*(["--python", opts.python] if opts.python else []), *(["--bundle", opts.bundle] if opts.bundle else [])]
    for flag, value in (("--partition", opts.partition), ("--nodes", opts.nodes), ("--budget", opts.node_budget_s)):
        if value is not None:
            args += [flag, str(value)]
    args += [
        f"--{name}" for name, on in (("nccl", opts.nccl), ("drain", opts.drain), ("workload", opts.workload)) if on
    ]
    if opts.workload:
        args += ["--workload-engine", opts.workload_engine, "--workload-iters", str(opts.workload_iters)]
        args += ["--workload-image", opts.workload_image] if opts.workload_image else []

    for rule in opts.suppress:
        args += ["--suppress", rule]
    return args


def _through_bastion(opts: VerifyOptions, loaded: LoadedConfig) -> None:
    from hpclz.verify.remote import explain_ssh

    explain_ssh(loaded, opts.scheduler, remote_arguments(opts))


def judged(outcome: VerifyOutcome, silenced: set[str]) -> VerifyOutcome:
    """Every node's results as findings of the verify rules (hpclz.verify.checks.VERIFY_RULES), for the `-o json`
    envelope, split by the same suppression the config and --suppress give validate."""
    from hpclz.verify.checks import VERIFY_RULES
    from hpclz.verify.checks.rules import NodeContext

    suppressed: set[str] = set()
    for node in outcome.report.nodes:
        reported, silent = run_rules(VERIFY_RULES, NodeContext(report=node), silenced)
        outcome.findings += reported
        suppressed |= {f.rule_id for f in silent}
    outcome.suppressed = sorted(suppressed)
    return outcome


def _nodes(client: SlurmClient, config: LandingZoneConfig, opts: VerifyOptions) -> dict[str, NodeInfo]:
    partitions: Sequence[str | None] = (
        [opts.partition]
        if opts.partition
        else (config.verify.partitions or [p.name for p in config.compute.partitions] or [None])
    )
    infos: dict[str, NodeInfo] = {}
    for part in partitions:
        found = client.nodes(partition=part, nodelist=opts.nodes)
        if not found and not opts.nodes:
            raise HpclzError(
                f"Slurm partition {part!r} has no nodes (sinfo -p {part})",
                exit_code=ExitCode.USAGE,
                hint="name a partition with --partition, or set verify.partitions in the config",
            )
        infos.update({i.name: i for i in found})
    if opts.nodes:
        missing = sorted(set(client.expand(opts.nodes)) - set(infos))
        if missing:
            raise HpclzError(
                f"--nodes {opts.nodes}: not in partition(s) {', '.join(p or '*' for p in partitions)}: {','.join(missing)}",
                exit_code=ExitCode.USAGE,
            )
    if not infos:
        raise HpclzError("no nodes to verify", exit_code=ExitCode.USAGE)
    return _past_pings(client, infos)


def _past_pings(client: SlurmClient, infos: dict[str, NodeInfo]) -> dict[str, NodeInfo]:
    """Give nodes marked `*` (no answer to the last ping) a moment: slurmctld marks every node it has just
    resumed that way until its forced ping returns, about a second later. Those still silent are unreachable.
    Only state and reason are refreshed: sinfo without -p lists every partition of a node, and the job must go
    to the one the node was selected through."""
    deadline = time.monotonic() + PING_GRACE_S
    silent = [n for n, i in infos.items() if i.state.endswith("*") and not i.state.startswith("down")]
    while silent and time.monotonic() < deadline:
        time.sleep(0.25)
        fresh = {i.name: i for i in client.nodes(nodelist=",".join(silent))}
        infos.update({n: replace(infos[n], state=fresh[n].state, reason=fresh[n].reason) for n in silent if n in fresh})
        silent = [n for n in silent if infos[n].state.endswith("*")]
    return infos


def _partition(info: NodeInfo) -> str | None:
    """The partition a node was selected through (sinfo -p lists only that one)."""
    return info.partitions[0] if info.partitions else None


def _partition_sku(config: LandingZoneConfig, partition: str | None) -> str | None:
    return next((p.vm_size for p in config.compute.partitions if p.name == partition), None)


def agent_command(config: LandingZoneConfig, python: str, sku: str | None, nccl: bool) -> list[str]:
    """`python -m hpclz.verify.agent` with the partition's SKU, the config's overrides and per-check timeout."""
    return [python, "-m", "hpclz.verify.agent", *agent_options(config, sku, nccl)]


def agent_options(config: LandingZoneConfig, sku: str | None, nccl: bool) -> list[str]:
    """What follows however a node starts the agent: the partition's SKU, the config's overrides, the per-check
    timeout."""
    cmd = ["--json", RESULT_PLACEHOLDER, *agent_arguments(_overrides(config, sku))]
    cmd += ["--timeout", str(config.verify.check_timeout_seconds)]
    if sku:
        cmd += ["--sku", sku]
    return [*cmd, "--nccl"] if nccl else cmd


def node_bundle(config: LandingZoneConfig, bundle: str | None = None) -> str:
    """Where the nodes find the single-file bundle: `bundle` (--bundle), else where the scheduler's
    hpclz-gate-install puts it for this config's cluster (hpclz.render.health_gate.HealthGate.bundle)."""
    if bundle:
        return bundle
    from hpclz.render.cloudinit import cluster_name
    from hpclz.render.health_gate import health_gate
    from hpclz.render.zone import Zone

    return health_gate(cluster_name(Zone(config))).bundle


def agent_code(
    config: LandingZoneConfig, python: str | None, bundle: str | None, module: str, *bundle_args: str
) -> NodeCode:
    """How the nodes start `module`: `python` (--python) alone where given, else the bundle, else this interpreter
    where a node has it (as on a cluster whose nodes share the scheduler's disk)."""
    found = None if python else node_bundle(config, bundle)
    return node_code(module, bundle=found, python=python, fallback=sys.executable, bundle_args=bundle_args)


def _health(
    client: SlurmClient,
    config: LandingZoneConfig,
    opts: VerifyOptions,
    chosen: Selection,
    infos: dict[str, NodeInfo],
    work: Path,
) -> dict[str, NodeReport]:
    budget = opts.node_budget_s or _default_budget(config)
    groups: dict[tuple[str | None, str], list[str]] = {}  # (partition, "run"|"retest") -> nodes
    for kind, names in (("run", chosen.runnable), ("retest", chosen.retest)):
        for n in names:
            groups.setdefault((_partition(infos[n]), kind), []).append(n)
    reservation = f"hpclz-verify-{os.getpid()}-{int(time.time())}" if chosen.retest else None
    if reservation:
        client.reserve(reservation, chosen.retest, minutes=-(-(budget + QUEUE_WAIT_S + GRACE_S) // 60) + 1)
        for n in chosen.retest:
            client.resume(n)

    code = agent_code(config, opts.python, opts.bundle, "hpclz.verify.agent")

    def run(key: tuple[str | None, str], names: list[str]) -> dict[str, NodeReport]:
        partition, kind = key
        plan = FanOut(
            command=agent_options(config, _partition_sku(config, partition), opts.nccl),
            code=code,
            work_dir=work / f"health-{kind}-{partition or 'default'}",
            node_budget_s=budget,
            queue_wait_s=QUEUE_WAIT_S,
            partition=partition,
            max_nodes_per_job=opts.max_nodes_per_job,
        )
        return fan_out(client, names, plan, reservation=reservation if kind == "retest" else None)

    reports: dict[str, NodeReport] = {}
    try:
        with ThreadPoolExecutor(max_workers=max(1, len(groups))) as pool:
            for part in pool.map(lambda kv: run(*kv), groups.items()):
                reports.update(part)
    except BaseException:
        with contextlib.suppress(SlurmError):  # the first error is the one to report
            for n in chosen.retest:  # never leave a node resumed that hpclz had drained and did not re-test
                client.drain(n, infos[n].reason)
        raise
    finally:
        if reservation:
            client.unreserve(reservation)
    return reports


def _default_budget(config: LandingZoneConfig) -> int:
    # Each of the agent's external commands is bounded by check_timeout_seconds and most take seconds (aznhc's
    # whole run: 5-8 min at 500 s per check), so a node whose run exceeds two such limits is stuck, not slow.
    return 2 * config.verify.check_timeout_seconds


def _healthy_by_partition(tested: dict[str, NodeReport], infos: dict[str, NodeInfo]) -> dict[str | None, list[str]]:
    by_partition: dict[str | None, list[str]] = {}
    for n in sorted(tested):
        if not tested[n].failures():
            by_partition.setdefault(_partition(infos[n]), []).append(n)
    return by_partition


def _convict(
    client: SlurmClient,
    opts: VerifyOptions,
    tested: dict[str, NodeReport],
    report: VerifyReport,
    node: str,
    failures: Sequence[CheckResult],
) -> None:
    """A node a run across nodes found at fault: the failing checks join its own report, so it is named, counted
    and (with --drain) drained like a node that failed its own checks."""
    tested[node] = tested[node].model_copy(update={"checks": [*tested[node].checks, *failures]})
    if opts.drain:
        client.drain(node, drain_reason(tested[node]))
        report.drained.append(node)
        if node in report.resumed:
            report.resumed.remove(node)


def _collectives(
    client: SlurmClient,
    config: LandingZoneConfig,
    opts: VerifyOptions,
    tested: dict[str, NodeReport],
    infos: dict[str, NodeInfo],
    report: VerifyReport,
    work: Path,
) -> None:
    """Per partition (one SKU, one fabric): ring pairs over the nodes that passed, then one all-node run. On a
    rack-scale size with racks in Slurm's block topology, per-rack runs come first (_rack_runs) and the all-node
    run goes across the racks."""
    by_partition = _healthy_by_partition(tested, infos)
    code = agent_code(config, opts.python, opts.bundle, "hpclz.verify.collective_job", COLLECTIVE_COMMAND)
    for partition, healthy in by_partition.items():
        if len(healthy) < 2:
            continue
        sku = _partition_sku(config, partition)
        plan = coll.CollectivePlan(
            **collective_backend(sku, _overrides(config, sku)),
            python=opts.python or sys.executable,
            code=code,
            work_dir=work / "collectives",
            budget_s=opts.node_budget_s or config.verify.check_timeout_seconds,
            queue_wait_s=QUEUE_WAIT_S,
            partition=partition,
            master_addr=os.environ.get(MASTER_ADDR_ENV),
        )
        racks = _racks(client, sku, healthy)
        if racks:
            blamed, out = _rack_runs(client, config, racks, healthy, plan, report)
        else:
            pairs = coll.run_pairs(client, healthy, plan)
            blamed, out = coll.analyse_pairs(pairs, plan.threshold_busbw_gbps), set()
            report.collectives.extend(pairs)
        for node, failure in coll.pair_failures(blamed).items():
            _convict(client, opts, tested, report, node, failure.checks)
        rest = [n for n in healthy if n not in blamed and n not in out]
        if len(rest) >= 2:
            name = "all-nodes" if len(by_partition) == 1 else f"all-nodes-{partition}"
            name = (
                f"across-racks-{partition}" if len({r for r, ns in racks.items() if set(ns) & set(rest)}) > 1 else name
            )
            report.collectives.append(_judge_all(coll.run_all_nodes(client, rest, plan, name=name)))


def _racks(client: SlurmClient, sku: str | None, healthy: list[str]) -> dict[str, list[str]]:
    """The racks (NVLink domains) of a rack-scale size, as Slurm's block topology holds them (hpclz.slurm.topology
    and topology_yaml keep it true to what the GPUs report); none for other sizes or without the block plugin."""
    from hpclz.catalog.skus import load_catalog

    entry = load_catalog().sku(sku) if sku else None
    if entry is None or not entry.nvlink_domain_vms:
        return {}
    from hpclz.slurm.topology_yaml import BLOCK_TOPOLOGY

    try:
        blocks = client.blocks()
    except SlurmError:
        return {}
    if not blocks:  # Slurm 25.05+ with topology.yaml: the default topology is flat, the racks are hpclz's block one
        try:
            blocks = client.blocks(BLOCK_TOPOLOGY)
        except SlurmError:
            return {}
    return {name: [n for n in nodes if n in healthy] for name, nodes in blocks.items() if set(nodes) & set(healthy)}


def _rack_runs(
    client: SlurmClient,
    config: LandingZoneConfig,
    racks: dict[str, list[str]],
    healthy: list[str],
    plan: coll.CollectivePlan,
    report: VerifyReport,
) -> tuple[dict[str, str], set[str]]:
    """One all-reduce per rack against the per-rack threshold; ring pairs only inside a slow rack, to find a slow
    node there. Returns the nodes blamed and the nodes of racks named as slow (left out of the run across racks)."""
    sku = _partition_sku(config, plan.partition)
    limits = load_thresholds(sku, _overrides(config, sku)) if sku else None
    per_rack = limits.get(RACK) if limits else None
    runs = coll.run_racks(client, racks, healthy, replace(plan, threshold_busbw_gbps=per_rack))
    report.collectives.extend(runs)
    blamed: dict[str, str] = {}
    out: set[str] = set()
    for slow in coll.analyse_racks(runs, per_rack):
        pairs = coll.run_pairs(client, slow.nodes, plan) if len(slow.nodes) > 2 else []
        found = coll.analyse_pairs(pairs, None) if pairs else {}
        report.collectives.extend(pairs)
        why = coll.name_rack(slow, pairs, found)
        if why is not None:
            report.slow_racks[slow.name.removeprefix(coll.RACK_PREFIX)] = why
            out.update(slow.nodes)
        blamed.update(found)
    return blamed, out


def _workload(
    client: SlurmClient,
    config: LandingZoneConfig,
    opts: VerifyOptions,
    tested: dict[str, NodeReport],
    infos: dict[str, NodeInfo],
    report: VerifyReport,
    work: Path,
) -> None:
    """The training proof on the nodes that passed everything so far, per partition; a node it convicts gets the
    failing check in its own report (so it is named and drained like any failing node)."""
    from hpclz.catalog.skus import load_catalog
    from hpclz.verify.workload import chain
    from hpclz.verify.workload.expectations import for_gpu
    from hpclz.verify.workload.scripts import DEFAULT_IMAGE, TOPO_FILES, WorkloadPlan
    from hpclz.verify.workload.shape import PROOF_MODEL, STANDIN_MODEL

    by_partition = _healthy_by_partition(tested, infos)
    if not by_partition:
        report.workload = WorkloadReport(checks=[chain.nothing_to_train()])
    for partition, healthy in by_partition.items():
        sku = _partition_sku(config, partition)
        entry = load_catalog().sku(sku) if sku else None
        gpus = entry.gpu_count if entry and entry.gpu_count else 0
        plan = WorkloadPlan(
            work_dir=work / (f"workload-{partition}" if partition else "workload"),
            shape=STANDIN_MODEL if opts.workload_engine == "cpu" else PROOF_MODEL,
            mode="standin" if opts.workload_engine == "cpu" else "megatron",
            train_iters=opts.workload_iters,
            gpus_per_node=gpus or 1,
            python=opts.python or sys.executable,  # the stand-in needs hpclz and torch on the nodes (--python)
            image=opts.workload_image or DEFAULT_IMAGE,
            topo_file=TOPO_FILES.get(sku or ""),
            master_addr=os.environ.get(MASTER_ADDR_ENV),
        )
        # The stand-in trains on CPUs: a GPU's peak and MFU floor mean nothing there, only the peers' median does.
        expect = for_gpu(entry.gpu_model if entry and plan.mode == "megatron" else None)
        judged = chain.run(client, plan, healthy, expect, partition=partition, inputs=opts.workload_data)
        _merge_workload(report, judged.report)
        for node, failures in judged.bad_nodes.items():
            _convict(client, opts, tested, report, node, failures)


def _refuse_workload_without_gpus(config: LandingZoneConfig, opts: VerifyOptions) -> None:
    """Before any job: Megatron-LM needs GPUs, so a partition in scope whose size has none is a usage error."""
    from hpclz.catalog.skus import load_catalog

    wanted = [opts.partition] if opts.partition else config.verify.partitions
    catalog = load_catalog()
    for part in config.compute.partitions:
        if wanted and part.name not in wanted:
            continue
        entry = catalog.sku(part.vm_size)
        if not (entry and entry.gpu_count):
            raise HpclzError(
                f"--workload: partition {part.name} ({part.vm_size}) has no GPUs for Megatron-LM; name a GPU "
                "partition with -p, or use --workload-engine cpu (the gloo stand-in) to prove the scheduler, the "
                "shared folder and the job chain",
                exit_code=ExitCode.USAGE,
            )


def _merge_workload(report: VerifyReport, part: WorkloadReport) -> None:
    if report.workload is None:
        report.workload = part
        return
    report.workload.runs += part.runs
    report.workload.checks += part.checks
    report.workload.steps.update({f"{k}": v for k, v in part.steps.items()})


def collective_backend(sku: str | None, overrides: Mapping[str, float] | None = None) -> dict[str, Any]:
    """NCCL with one rank per GPU where the SKU's GPU count is known, at the sizes that reach peak bandwidth
    (azurehpc's ring pairs use 8 GiB), judged against the SKU's inter-node busbw threshold; gloo over TCP, one
    rank per node, elsewhere, where an InfiniBand figure means nothing and only a config override applies."""
    overrides = overrides or {}
    thresholds = load_thresholds(sku, overrides) if sku else None
    plan: dict[str, Any]
    if thresholds is not None and (gpus := thresholds.get("gpu_count")):
        plan = {"backend": "nccl", "ranks_per_node": int(gpus), "sizes": (1 << 30, 8 << 30), "iters": 20, "warmup": 5}
        threshold = thresholds.get(INTERNODE)
    else:
        plan = {"backend": "gloo"}
        threshold = overrides.get(INTERNODE)
    if threshold is not None:
        plan["threshold_busbw_gbps"] = float(threshold)
    return plan


def _overrides(config: LandingZoneConfig, sku: str | None) -> dict[str, float]:
    try:
        return overrides_for(config.verify.thresholds, sku)
    except ValueError as exc:
        raise HpclzError(str(exc), exit_code=ExitCode.CONFIG_INVALID) from None


def _judge_all(result: CollectiveResult) -> CollectiveResult:
    if result.status is Status.NOT_MEASURED and result.points:
        result.status = Status.PASS
    return result
