"""The cluster as plan lines: the scheduler, the login nodes and each partition, with their change verdicts.

CycleCloud, not ARM, creates these VMs from the cluster template, so neither the offline diff nor ARM what-if
lists them. They are derived from the config's `compute` block (never from template text) and take their
action and verdict from the config-level diff, so a line says the same as the config changes it gathers.

How the template maps them (CycleCloud node and nodearray attributes,
https://learn.microsoft.com/azure/cyclecloud/cluster-references/node-nodearray-reference): the scheduler is a
`[[node scheduler]]`, one VM; login nodes are `[[nodearray login]]` with InitialCount = MaxCount = count, so that
many run from the start; a partition is a nodearray with MaxCount = max_nodes and no InitialCount, so none run
until Slurm asks for them (`slurm.autoscale = true`, Azure/cyclecloud-slurm README "Autoscale").
"""

from __future__ import annotations

import re
from typing import Any

from hpclz.config.compute import Partition
from hpclz.config.root import LandingZoneConfig
from hpclz.plan.changeset import Action, ChangeSet, ClusterLine, ConfigChange, Role

_PARTITION = re.compile(r"compute\.partitions\[[^\]]+\]")


def _node(role: Role, name: str, vm_size: str, image: str, count: int, zone: str | None) -> ClusterLine:
    return ClusterLine(role=role, name=name, vm_size=vm_size, image=image, min_nodes=count, max_nodes=count, zone=zone)


def _partition(p: Partition | dict[str, Any]) -> ClusterLine:
    part = p if isinstance(p, Partition) else Partition.model_validate(p)
    return ClusterLine(
        role="partition",
        name=part.name,
        vm_size=part.vm_size,
        image=part.image,
        min_nodes=0,
        max_nodes=part.max_nodes,
        spot=part.priority == "spot",
        zone=part.zone,
    )


def _owned(line: ClusterLine, change: ConfigChange) -> bool:
    """Whether a config change touches this line. The service zone places the scheduler and login nodes."""
    path = change.path
    if line.role == "partition":
        own = f"compute.partitions[{line.name}]"
        return path == own or path.startswith(f"{own}.")
    own = f"compute.{line.role}"
    return path == own or path.startswith(f"{own}.") or path == "compute.service_zone"


def _judge(line: ClusterLine, changes: list[ConfigChange]) -> ClusterLine:
    line.changes = [c for c in changes if _owned(line, c)]
    whole = f"compute.partitions[{line.name}]" if line.role == "partition" else "compute.login.count"
    appears = [c for c in line.changes if c.path == whole and (line.role == "partition" or not c.before or not c.after)]
    if appears:  # a partition added or removed; login nodes from none or down to none (the nodearray itself)
        change = appears[0]
        line.action = Action.CREATE if not change.before else Action.DELETE if not change.after else change.kind
        line.verdict = change.verdict
    elif line.changes:
        line.action = Action.MODIFY
        line.verdict = max((c.verdict for c in line.changes), key=lambda v: v.policy.rank)
    else:
        line.action = Action.NO_CHANGE
    return line


def _shown(line: ClusterLine) -> bool:
    """Login nodes with count 0 are no nodearray at all (the template leaves it out) unless they just went."""
    return line.role != "login" or line.max_nodes > 0 or line.action is Action.DELETE


def cluster_lines(config: LandingZoneConfig, changes: ChangeSet) -> list[ClusterLine]:
    """The cluster's lines for `config`, with the actions the change set's config diff implies."""
    compute = config.compute
    zone = compute.service_zone
    lines = [_node("scheduler", "scheduler", compute.scheduler.vm_size, compute.scheduler.image, 1, zone)]
    login = compute.login
    lines.append(_node("login", "login", login.vm_size, login.image, login.count, zone))
    lines += [_partition(p) for p in compute.partitions]
    if changes.state is None:  # no state: everything is new
        for line in lines:
            line.action = Action.CREATE
    elif changes.config_baseline:
        removed = [
            _partition(c.before)
            for c in changes.config_changes
            if c.kind is Action.DELETE and _PARTITION.fullmatch(c.path) and isinstance(c.before, dict)
        ]
        lines = [_judge(li, changes.config_changes) for li in [*lines, *removed]]
    # else: actions stay unknown, the state holds no applied config to compare with
    return [li for li in lines if _shown(li)]
