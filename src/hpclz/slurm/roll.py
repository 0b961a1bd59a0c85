"""`hpclz nodes roll|status`: roll a partition's nodes onto a new node definition through Slurm, and follow it.

The roll marks the nodes `State=POWER_DOWN_ASAP` (hpclz.slurm.power): Slurm drains them, lets their jobs finish and
powers each down when it is idle; CycleCloud then deletes the VM, and the next job that needs the node gets one
built from the current definition (docs/patching.md). It runs where Slurm is (the scheduler, or --slurm-conf), or
on the scheduler VM through Azure Run Command from the machine that deployed, as `hpclz verify` does: the caller
passes that trip as `there` (hpclz.azure.remote_nodes), so this Slurm adapter never imports the Azure one.

Refused, with one line and nothing changed: a partition the config does not define, a node outside the chosen
partitions, a node of a rack-scale partition (replaced whole, never node by node: hpclz.plan.racks.RACK_REPLACE, the
line the refusal gives) and a node Slurm has no power saving for (it would be drained and never replaced).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from hpclz.config.loader import LoadedConfig
from hpclz.errors import ExitCode, HpclzError
from hpclz.output import ResultBody
from hpclz.slurm.client import NodeInfo, SlurmClient
from hpclz.slurm.power import Phase, phase, read_power_saving, roll_command, roll_reason
from hpclz.slurm.route import SCHEDULER_PYTHON, azure_explained, through_run_command

POLL_S = 1.0
# Runs `hpclz nodes ARGS -o json` on the scheduler VM and gives back its envelope's `result`.
There = Callable[[list[str]], dict[str, Any]]


@dataclass(frozen=True)
class NodesOptions:
    config: Path
    partitions: tuple[str, ...] = ()  # status: default every partition of the config
    all_partitions: bool = False  # roll: every partition, asked for by name (--all), never by omission
    nodes: str | None = None  # a Slurm hostlist within those partitions
    dry_run: bool = False
    why: str | None = None  # the roll's reason after "hpclz: roll: "
    wait_s: int = 0  # status: follow until every node is powered down, at most this long
    slurm_conf: Path | None = None
    via: str | None = None  # "slurm" here, "run-command" on the scheduler VM; None: here when Slurm is
    scheduler: str | None = None
    report_account: str | None = None
    remote_python: str = SCHEDULER_PYTHON  # on the scheduler VM, for --via run-command
    progress: Callable[[str], None] = field(default=lambda _line: None)


class NodeState(BaseModel):
    name: str
    partition: str
    state: str  # sinfo's long state with its flag: drained!, idle%, idle~
    reason: str = ""
    phase: Phase


class NodesResult(ResultBody):
    action: str  # roll | status
    dry_run: bool = False
    command: str | None = None  # roll: the scontrol line it ran (or would run, with --dry-run)
    nodes: list[NodeState] = Field(default_factory=list)
    waited_s: float | None = None  # status --wait: how long it followed the roll

    @property
    def powered_down(self) -> bool:
        return all(n.phase is Phase.POWERED_DOWN for n in self.nodes)

    def exit_code(self) -> ExitCode:
        """status --wait that ran out of time before every node powered down exits 1; everything else 0."""
        return ExitCode.FAILED if self.waited_s is not None and not self.powered_down else ExitCode.OK


def roll(loaded: LoadedConfig, opts: NodesOptions, there: There) -> NodesResult:
    if not (opts.partitions or opts.nodes or opts.all_partitions):
        raise HpclzError(
            "nodes roll: name what to roll: --partition NAME, --nodes HOSTLIST, or --all "
            "(every partition of the config: the whole cluster drains)",
            exit_code=ExitCode.USAGE,
        )
    # Imported here: which partitions are rack-scale comes from the VM catalog (its NVLink domain size), which no other
    # nodes command loads (tests/test_import_guard.py).
    from hpclz.plan.racks import rack_partitions

    partitions = _partitions(loaded, opts.partitions)
    racks = rack_partitions(loaded.config)
    if opts.partitions or opts.all_partitions:  # named: refused before Slurm (or the scheduler VM) is asked
        _refuse_racks([p for p in partitions if p in racks], racks)
    if opts.all_partitions:
        opts = replace(opts, partitions=tuple(partitions))  # the scheduler gets the same choice by name
    if _remote(opts):
        return _on_scheduler("roll", opts, there)
    client = SlurmClient.from_env(opts.slurm_conf)
    infos = _select(client, partitions, opts.nodes)
    hostlist = client.hostlist(sorted(infos))
    power = read_power_saving(client)
    # Every partition of each node, not only the one it was selected through: any of them may turn power saving off,
    # and any of them may be a rack-scale partition.
    whole = client.nodes(nodelist=hostlist)
    _refuse_racks(sorted({p for i in whole for p in i.partitions if p in racks}), racks)
    refused = {i.name: why for i in whole if (why := power.why_not(i)) is not None}
    if refused:
        said = "; ".join(f"{n}: {why}" for n, why in sorted(refused.items()))
        raise HpclzError(
            f"cannot roll {len(refused)} node(s), nothing was changed: {said}",
            exit_code=ExitCode.USAGE,
            hint="roll only nodes Slurm powers down, such as CycleCloud's autoscaled nodearrays; restart the others",
        )
    args = roll_command(hostlist, roll_reason(opts.why))
    if not opts.dry_run:
        client.run("scontrol", *args)
        infos = _select(client, partitions, hostlist)
    shown = "scontrol " + " ".join(a if " " not in a else f"'{a}'" for a in args)
    return NodesResult(action="roll", dry_run=opts.dry_run, command=shown, nodes=_states(infos))


def _refuse_racks(chosen: Sequence[str], racks: dict[str, int]) -> None:
    """A rack-scale partition is kept out of Slurm's power saving and brought up whole by scale_m1: a roll node by
    node would leave part racks that get no job. The one line says how it is replaced instead."""
    if chosen:
        from hpclz.plan.racks import rack_replacement

        raise HpclzError(
            f"cannot roll, nothing was changed: {rack_replacement(chosen[0], racks[chosen[0]])}",
            exit_code=ExitCode.USAGE,
        )


def status(loaded: LoadedConfig, opts: NodesOptions, there: There) -> NodesResult:
    partitions = _partitions(loaded, opts.partitions)
    if _remote(opts):
        return _on_scheduler("status", opts, there)
    client = SlurmClient.from_env(opts.slurm_conf)
    started = time.monotonic()
    infos = _select(client, partitions, opts.nodes)
    result = NodesResult(action="status", nodes=_states(infos))
    while opts.wait_s and not result.powered_down and time.monotonic() - started < opts.wait_s:
        time.sleep(POLL_S)
        result.nodes = _states(_select(client, partitions, ",".join(sorted(infos))))
    if opts.wait_s:
        result.waited_s = round(time.monotonic() - started, 1)
    return result


def _remote(opts: NodesOptions) -> bool:
    return through_run_command(opts.via, opts.scheduler, opts.slurm_conf)


def _partitions(loaded: LoadedConfig, wanted: Sequence[str]) -> list[str]:
    defined = [p.name for p in loaded.config.compute.partitions]
    unknown = [p for p in wanted if p not in defined]
    if unknown:
        raise HpclzError(
            f"--partition {', '.join(unknown)}: not a partition of {loaded.file} "
            f"(compute.partitions: {', '.join(defined) or 'none'})",
            exit_code=ExitCode.USAGE,
        )
    if not defined:
        raise HpclzError(f"{loaded.file}: compute.partitions is empty: no nodes to roll", exit_code=ExitCode.USAGE)
    return list(wanted) or defined


def _select(client: SlurmClient, partitions: Sequence[str], nodes: str | None) -> dict[str, NodeInfo]:
    """The nodes of the partitions (or those of --nodes, which must all be in them), as Slurm reports them."""
    infos: dict[str, NodeInfo] = {}
    for part in partitions:
        found = client.nodes(partition=part)
        if not found:
            raise HpclzError(
                f"Slurm has no nodes in partition {part} (sinfo -p {part}): is the cluster started?",
                exit_code=ExitCode.USAGE,
            )
        infos.update({i.name: i for i in found if i.name not in infos})
    if nodes is None:
        return infos
    wanted = client.expand(nodes)
    outside = [n for n in wanted if n not in infos]
    if outside:
        raise HpclzError(
            f"--nodes {nodes}: not in partition(s) {', '.join(partitions)}: {','.join(outside)}",
            exit_code=ExitCode.USAGE,
        )
    return {n: infos[n] for n in wanted}


def _states(infos: dict[str, NodeInfo]) -> list[NodeState]:
    return [
        NodeState(
            name=i.name,
            partition=i.partitions[0] if i.partitions else "",
            state=i.state,
            reason=i.reason,
            phase=phase(i),
        )
        for i in sorted(infos.values(), key=lambda i: i.name)
    ]


def _on_scheduler(action: str, opts: NodesOptions, there: There) -> NodesResult:
    with azure_explained(f"nodes {action}", opts.via, opts.scheduler):
        body = there([action, *remote_arguments(opts)])
    return NodesResult.model_validate(body)


def remote_arguments(opts: NodesOptions) -> list[str]:
    """The options that mean the same on the scheduler; the run there is always through its own Slurm."""
    args = ["--via", "slurm"]
    for part in opts.partitions:
        args += ["--partition", part]
    for flag, value in (("--nodes", opts.nodes), ("--why", opts.why)):
        if value is not None:
            args += [flag, value]
    if opts.wait_s:
        args += ["--wait", str(opts.wait_s)]
    return [*args, "--dry-run"] if opts.dry_run else args
