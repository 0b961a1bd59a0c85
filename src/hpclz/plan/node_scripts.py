"""Nodes that keep the scripts they were created with: what an hpclz upgrade (or a config edit) changes in a node's
CloudInit, or in the slurm.conf lines, reaches only VMs created after it, so the plan says which running nodes must
be replaced, and in what order.

Why a running node keeps its scripts:
- a node's CloudInit rides in its VM's customData (hpclz.render.shipped), and "Custom data is made available to the VM
  during first startup or setup, which is called provisioning"; "For single VMs, you can't update custom data in the
  VM model", and in a scale set "Existing instances in the scale set won't get the updated custom data until they're
  reimaged", while "New instances will receive the new custom data" (learn.microsoft.com/azure/virtual-machines/
  custom-data, FAQ; MicrosoftDocs/azure-docs@07fecae articles/virtual-machines/custom-data.md). The scheduler's
  CloudInit is what installs hpclz's programs there (templates/cloud-init/scheduler.sh.j2, gate_install.sh.j2: the
  health gate and the job credential's prolog and epilog under /sched/<cluster>/prolog.d);
- cyclecloud-slurm writes slurm.conf, with the `slurm.additional.config` text (hpclz's HpclzSlurmConfig parameter)
  appended, only when its install runs on the scheduler (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py
  l.529-593), and its cluster-init runs once per VM (hpclz.plan.upgrade, NODE_REPLACED);
- hpclz-cluster-sync imports the new cluster template on the server (hpclz.render.cloudinit), so a node CycleCloud
  creates after the deploy boots the new CloudInit.

What is compared: the cluster definition in the CycleCloud server's userData as state recorded it at the last apply
(the rendered body, hpclz.deploy.records) against the one rendered now, nodearray by nodearray (hpclz.plan.decode).
The steps are the upgrade road's (hpclz.plan.upgrade): timeouts raised, the scheduler a new VM through `cyclecloud
terminate_node` / `start_node`, `scontrol reconfigure` once its slurmctld answers (the slurmd learn its address),
timeouts restored, then each partition rolled, then the login nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpclz.plan.changeset import Action, ChangeSet, NodeScripts
from hpclz.plan.decode import cluster_document
from hpclz.plan.racks import rack_replacement
from hpclz.plan.resources import desired_resources
from hpclz.plan.upgrade import CTLD_ANNOUNCED, ROLL, SCHED_KEPT, TIMEOUTS_RAISED, TIMEOUTS_RESTORED
from hpclz.render.model import DeploymentPlan
from hpclz.state.model import StateDocument

VM = "microsoft.compute/virtualmachines"
SCRIPT = "CloudInit"
SLURM_CONF = "slurm.conf lines"
SLURM_PARAMETER = (
    "HpclzSlurmConfig"  # templates/cyclecloud/slurm-cluster.txt.j2: slurm.additional.config = $HpclzSlurmConfig
)

NODE_KEPT = (
    "a VM's CloudInit is its customData, read at its first boot only, and cyclecloud-slurm's cluster-init does not "
    "run again on a later converge"
)
SCHEDULER_REPLACED = (
    "scheduler (new {what}): right after the deploy, back up StateSaveLocation, then on the CycleCloud server "
    "`cyclecloud terminate_node <cluster> scheduler`, then `cyclecloud start_node <cluster> scheduler`{sched_kept}. "
    "The new VM boots the new CloudInit and cyclecloud-slurm's install writes slurm.conf with the new lines; the "
    "running scheduler keeps the old ones whatever the deploy does ({kept}). slurmctld is down until the new VM's "
    "cluster-init has finished; running jobs keep running under the timeouts raised above. Until then, nodes "
    "CycleCloud creates already boot their new CloudInit against the old scheduler's prolog and slurm.conf"
)
PARTITION_ROLLED = (
    "partition {p} (new CloudInit): nodes CycleCloud creates from now on boot the new one; nodes running now keep "
    "the old one until they are replaced: {how}"
)
LOGIN_REPLACED = (
    "login nodes (new CloudInit): they run from the start and keep the old CloudInit until replaced: for each "
    "login node, on the CycleCloud server `cyclecloud terminate_node <cluster> <login node>`, then `cyclecloud "
    "start_node <cluster> <login node>`"
)
UPGRADE_COVERS = (
    "the stack upgrade's steps: they replace the scheduler and the login nodes and roll every partition, so each of "
    "these nodes comes back as a new VM with the new scripts"
)
SERVER_COVERS = (
    "the CycleCloud server's replacement: it terminates the cluster and starts it again, every node a new VM with the "
    "new scripts"
)


def _record_user_data(properties: dict[str, Any]) -> Any:
    """userData from a recorded body, whole (`properties.userData`) or as older states kept it (`userData`)."""
    inner = properties.get("properties")
    return (inner if isinstance(inner, dict) else properties).get("userData")


def _scripts(document: dict[str, Any]) -> dict[str, str]:
    """`scheduler`, `login` and each partition's nodearray -> its CloudInit, and SLURM_CONF -> the slurm.conf lines."""
    out: dict[str, str] = {}
    for key, value in document.get("template", {}).items():
        head, _, attribute = key.rpartition(".")
        if attribute != SCRIPT or "[" not in head:
            continue
        out[head.split("[", 1)[1].rstrip("]")] = value
    parameters = document.get("parameters")
    if isinstance(parameters, dict):
        out[SLURM_CONF] = str(parameters.get(SLURM_PARAMETER, ""))
    return out


def _server(plan: DeploymentPlan) -> tuple[str, dict[str, Any]] | None:
    """The CycleCloud server's name and cluster definition as rendered now."""
    for d in desired_resources(plan):
        if d.type.lower() == VM:
            document = cluster_document(d.body.get("properties", {}).get("userData"))
            if document is not None:
                return d.name, document
    return None


def _applied(state: StateDocument, name: str) -> dict[str, Any] | None:
    for record in state.resources:
        if record.type.lower() == VM and record.name.lower() == name.lower():
            return cluster_document(_record_user_data(record.properties))
    return None


def node_scripts(
    plan: DeploymentPlan, state: StateDocument | None, racks: Mapping[str, int] | None = None
) -> NodeScripts | None:
    """The nodes whose scripts differ from the last apply's; None where none do, or where there is no applied cluster
    definition to compare with (no state: every node is new; no server recorded: the server, and with it the
    cluster, is created). `racks`: the rack-scale partitions (hpclz.plan.racks.rack_partitions)."""
    rendered = _server(plan) if state is not None else None
    if rendered is None or state is None:
        return None
    name, document = rendered
    applied = _applied(state, name)
    if applied is None:
        return None
    before, after = _scripts(applied), _scripts(document)
    changed = {n for n in after if n in before and before[n] != after[n]}
    scheduler = [SCRIPT] if "scheduler" in changed else []
    scripts = NodeScripts(
        server=name,
        scheduler=scheduler + ([SLURM_CONF] if SLURM_CONF in changed else []),
        login="login" in changed,
        partitions=[n for n in after if n in changed and n not in ("scheduler", "login", SLURM_CONF)],
    )
    scripts.racks = {p: r for p, r in (racks or {}).items() if p in scripts.partitions}
    return scripts if scripts.scheduler or scripts.login or scripts.partitions else None


def order(changes: ChangeSet) -> None:
    """Fill in the steps of `changes.node_scripts`, after the rest of the plan is known: nothing of its own where the
    stack upgrade or a new CycleCloud server already makes every node a new VM."""
    scripts = changes.node_scripts
    if scripts is None:
        return
    up = changes.stack_upgrade
    replaced = any(
        r.action is Action.REPLACE and r.type.lower() == VM and r.name.lower() == scripts.server.lower()
        for r in changes.resources
    )
    if (up is not None and up.allowed and up.replaces_server) or replaced:
        scripts.covered_by, scripts.steps = SERVER_COVERS, []
        return
    if up is not None and up.allowed:
        scripts.covered_by, scripts.steps = UPGRADE_COVERS, []
        return
    scripts.covered_by = ""
    steps: list[str] = []
    if scripts.scheduler:
        what = " and ".join(scripts.scheduler)
        steps += [
            TIMEOUTS_RAISED,
            SCHEDULER_REPLACED.format(what=what, kept=NODE_KEPT, sched_kept=SCHED_KEPT),
            CTLD_ANNOUNCED,
            TIMEOUTS_RESTORED,
        ]
    steps += [
        PARTITION_ROLLED.format(
            p=p, how=rack_replacement(p, scripts.racks[p]) if p in scripts.racks else ROLL.format(p=p)
        )
        for p in scripts.partitions
    ]
    if scripts.login:
        steps.append(LOGIN_REPLACED)
    scripts.steps = [f"{n}. {text}" for n, text in enumerate(steps, start=1)]
