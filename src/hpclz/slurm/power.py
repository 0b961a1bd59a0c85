"""Power saving and the node roll: which nodes Slurm may power down, asking it to, and where each node has got to.

A roll is `scontrol update NodeName=... State=POWER_DOWN_ASAP Reason=...`: "Will drain the node and mark it for
power down. Currently running jobs will complete first and no additional jobs will be allocated to the node"
(scontrol(1), Slurm 22.05 and later). On a CycleCloud cluster the suspend program then deletes the VM and the next
job that needs the node gets one built from the nodearray's current definition (docs/patching.md).

Progress is read from sinfo's state flags (sinfo(1) NODE STATE CODES; SchedMD/slurm src/common/slurm_protocol_defs.c
node_state_string(): `!` POWER_DOWN pending, `%` POWERING_DOWN, `~` POWERED_DOWN, `#` POWERING_UP). Seen on Slurm
22.05.8 here (tests/slurm/test_roll.py): an idle node goes `drained!` -> `idle%` -> `idle~`, a busy one stays
`draining!` until its job ends; Slurm clears DRAIN once the node is powered down and keeps the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from hpclz.slurm.client import ROLL_PREFIX, NodeInfo, SlurmClient

DEFAULT_WHY = "new node definition"
UNSET = "(null)"  # how `scontrol show config` prints a program that is not set (Slurm 22.05.8, captured here)
INFINITE = "INFINITE"


class Phase(StrEnum):
    """Where a node is in a roll, from its sinfo state."""

    RUNNING_JOBS = "waiting for its jobs to end"  # marked, still allocated: powers down when they end
    PENDING = "power down pending"  # marked, idle: the power-save thread picks it up within its interval
    POWERING_DOWN = "powering down"  # the suspend program was called
    POWERED_DOWN = "powered down"
    POWERING_UP = "powering up"  # a job asked for it again: it comes back from the current definition
    UP = "up"  # not marked for power down


def phase(info: NodeInfo) -> Phase:
    flags = info.flags
    if "~" in flags:
        return Phase.POWERED_DOWN
    if "%" in flags:
        return Phase.POWERING_DOWN
    if "#" in flags:
        return Phase.POWERING_UP
    if "!" in flags:
        return Phase.PENDING if info.base in ("drained", "idle") else Phase.RUNNING_JOBS
    return Phase.UP


def roll_reason(why: str | None = None) -> str:
    return f"{ROLL_PREFIX}: {why or DEFAULT_WHY}"


def roll_command(hostlist: str, reason: str) -> list[str]:
    """The scontrol arguments that mark the nodes (one call: Slurm applies it to the whole hostlist)."""
    return ["update", f"NodeName={hostlist}", "State=POWER_DOWN_ASAP", f"Reason={reason}"]


@dataclass(frozen=True)
class PowerSaving:
    """What `scontrol show config` and `scontrol show partition` say about power saving (slurm.conf(5):
    SuspendProgram, ResumeProgram, SuspendTime "INFINITE is the default", SuspendExcNodes, SuspendExcParts, and a
    partition's SuspendTime, "INFINITE will disable suspending of nodes in this partition")."""

    programs: bool
    suspend_time: str  # the cluster's: "300 sec" or INFINITE
    excluded_nodes: frozenset[str] = frozenset()
    excluded_parts: frozenset[str] = frozenset()
    partition_time: dict[str, str] = field(default_factory=dict)  # only partitions that set their own

    def why_not(self, info: NodeInfo) -> str | None:
        """Why Slurm would not (or should not) power this node down; None when it may."""
        if not self.programs:
            return "Slurm here has no power saving (SuspendProgram or ResumeProgram not set)"
        if info.name in self.excluded_nodes:
            return "SuspendExcNodes keeps it powered up"
        for part in info.partitions:
            if part in self.excluded_parts:
                return f"SuspendExcParts keeps partition {part} powered up"
        for part in info.partitions or ("",):
            # slurm.conf(5): a partition's SuspendTime, else the cluster's; for a node in several partitions "the
            # highest time will take effect", and INFINITE is the highest.
            if self.partition_time.get(part, self.suspend_time).startswith(INFINITE):
                where = f"partition {part}" if part in self.partition_time else "the cluster"
                return f"{where} has SuspendTime=INFINITE (no power saving)"
        return None


def read_power_saving(client: SlurmClient) -> PowerSaving:
    config = _settings(client.run("scontrol", "show", "config").splitlines())
    partitions: dict[str, str] = {}
    for line in client.run("scontrol", "show", "partition", "-o").splitlines():
        tokens = dict(t.split("=", 1) for t in line.split() if "=" in t)
        if "PartitionName" in tokens and "SuspendTime" in tokens:
            partitions[tokens["PartitionName"]] = tokens["SuspendTime"]
    return PowerSaving(
        programs=all(config.get(k, UNSET) != UNSET for k in ("SuspendProgram", "ResumeProgram")),
        suspend_time=config.get("SuspendTime", INFINITE),
        excluded_nodes=frozenset(_hostlist(client, config.get("SuspendExcNodes", UNSET))),
        excluded_parts=frozenset(_names(config.get("SuspendExcParts", UNSET))),
        partition_time=partitions,
    )


def _settings(lines: Iterable[str]) -> dict[str, str]:
    """`Name   = value` lines of `scontrol show config`."""
    pairs = (line.split("=", 1) for line in lines if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def _names(value: str) -> list[str]:
    return [] if value == UNSET else [v for v in value.split(",") if v]


def _hostlist(client: SlurmClient, value: str) -> list[str]:
    """SuspendExcNodes may say `gpu[1-4]:2` (keep two of them up); every node it names is kept out of a roll."""
    if value == UNSET:
        return []
    names = [part.split(":", 1)[0] for part in _split_hostlist(value)]
    return client.expand(",".join(names)) if names else []


def _split_hostlist(value: str) -> list[str]:
    """Split at the commas outside brackets: `a[1,3]:1,b` -> [`a[1,3]:1`, `b`]."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(value):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(value[start:i])
            start = i + 1
    parts.append(value[start:])
    return [p for p in parts if p]
