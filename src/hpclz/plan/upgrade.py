"""A change of the CycleCloud / cyclecloud-slurm / Slurm triple, as ordered steps or as a refusal.

The road is `hpclz.catalog.versions.upgrade_path`: one deploy per hop, each hop within Slurm's compatibility window.
A config that jumps past the window (Slurm 23.11 straight to 25.11), goes back, or names a triple the table does not
know is refused, with the road to take instead. Within one hop the daemons go in Slurm's order: slurmdbd first, then
slurmctld, then slurmd, then the clients (https://slurm.schedmd.com/upgrades.html; "If using the slurmdbd ... you
must update this first", https://raw.githubusercontent.com/SchedMD/slurm/slurm-24.11/RELEASE_NOTES).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpclz.catalog.versions import (
    UPGRADES_GUIDE,
    StackTriple,
    find,
    marketplace_image,
    skew,
    slurm_major,
    upgrade_path,
    window,
)
from hpclz.plan.changeset import Action, ConfigChange, Policy, StackUpgrade, Verdict, worst
from hpclz.plan.racks import rack_replacement
from hpclz.plan.server_rebuild import SERVER, before_replace

FIELDS = ("version", "slurm_project_version", "slurm_version")
PATHS = tuple(f"compute.cyclecloud.{f}" for f in FIELDS)
# The roll of one partition, as config_diff.ROLL words it for a node image.
ROLL = "hpclz nodes roll CONFIG --partition {p} (running jobs finish first)"
# A running CycleCloud node keeps the Slurm it was built with. cyclecloud-slurm installs Slurm from its cluster-init
# (Azure/cyclecloud-slurm@50e6739 specs/scheduler/cluster-init/scripts/00-install.sh l.18-24 runs install.py, whose
# run_installer runs ubuntu.sh with the cluster's Slurm version, azure-slurm-install/install.py l.256-283), and "When a
# cluster-init script runs successfully, it places a file in /mnt/cluster-init/.run/(project)/(spec) to ensure the
# script doesn't run again on a subsequent converge" (learn.microsoft.com/azure/cyclecloud/how-to/projects, "Run files";
# MicrosoftDocs/azure-docs@1b3ccaf articles/cyclecloud/how-to/projects.md): a reboot does not install anything.
# ubuntu.sh also `apt-mark hold`s the Slurm packages it installed (Azure/cyclecloud-slurm@50e6739
# azure-slurm-install/ubuntu.sh l.40-55), so no apt upgrade moves them either. A new VM runs cluster-init afresh:
# `cyclecloud terminate_node <CLUSTER> <NODE_NAME>` "Terminates a running node (but leaves it in the cluster)",
# `cyclecloud start_node <CLUSTER> <NODE_NAME>` "Starts terminated nodes in a running cluster"
# (learn.microsoft.com/azure/cyclecloud/cli; MicrosoftDocs/azure-docs@1bf362e articles/cyclecloud/cli.md). A scheduler
# left on the old Slurm while partitions roll onto new-Slurm nodes breaks Slurm's order: "Rolling upgrades are also
# possible if the slurmctld is upgraded first" (slurm.schedmd.com/upgrades.html, "slurmctld (Controller)").
NODE_REPLACED = (
    "after the re-import, on the CycleCloud server: `cyclecloud terminate_node <cluster> {node}`, then "
    "`cyclecloud start_node <cluster> {node}`: the new VM runs cyclecloud-slurm's cluster-init, which installs "
    "Slurm {slurm}; a reboot keeps Slurm {old} (cluster-init does not run again on a later converge, and the Slurm "
    "packages are apt-mark held)"
)
# What the new scheduler VM finds: cyclecloud-slurm keeps StateSaveLocation and slurmdbd.conf under /sched
# (install.py: config_dir = /sched/<cluster> l.139, slurmdbd.conf there l.417-436, StateSaveLocation
# <config_dir>/spool/slurmctld l.501-504, Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py), and /sched is
# either on the storage.shared shares or the scheduler's `Persistent = True` volume (templates/cyclecloud/
# slurm-cluster.txt.j2, as the stock templates/slurm.txt l.134-146), which CycleCloud re-attaches to the node's next VM
# (hpclz.config.compute.NodeRole says where that is written). The accounting database is on its MySQL server.
STATE_SAVE = "/sched/<cluster>/spool/slurmctld"
SCHED_KEPT = (
    "; /sched stays (the storage.shared share or the scheduler's persistent volume) with StateSaveLocation "
    f"({STATE_SAVE}) and slurmdbd.conf, and the accounting database stays on its MySQL server"
)

# Slurm's own procedure for slurmctld (SchedMD/slurm@19f8131 doc/html/upgrades.shtml l.440-457, "slurmctld
# (Controller)"): "1. Increase configured SlurmdTimeout and SlurmctldTimeout values and execute `scontrol reconfig` for
# them to take effect. The new timeout should be long enough to perform the upgrade using your preferred method. If the
# timeout is reached, nodes may be marked DOWN and their jobs killed." ... "8. Validate proper operation, such as
# communication with nodes and a job's ability to successfully start and finish. 9. Restore the preferred SlurmdTimeout
# and SlurmctldTimeout values and execute `scontrol reconfig` for them to take effect." Where: the new scheduler VM
# writes slurm.conf afresh from cyclecloud-slurm's template (SlurmctldTimeout=30, no SlurmdTimeout, so slurm.conf(5)'s
# default of 300 s) and includes site_specific.conf last, a file it creates only when missing ("This is preserved
# during upgrades") and links to /etc/slurm on every node (Azure/cyclecloud-slurm@50e6739
# azure-slurm-install/install.py l.529-549, l.579-586, l.677-680; templates/slurm.conf.template l.48, l.77); of a key
# given twice Slurm takes the last ("specified more than once, latest value used", SchedMD/slurm@284c3b9
# src/common/parse_config.c l.536). The partitions need no raise of their own: a roll (ROLL) and a rack's
# POWER_DOWN_ASAP (hpclz.plan.racks.RACK_REPLACE) let running jobs finish before a node goes, so no job is left on a
# node whose slurmd stops answering.
TIMEOUTS_RAISED = (
    "before the scheduler is replaced, on it: raise SlurmdTimeout and SlurmctldTimeout above how long the scheduler's "
    "replacement takes (add `SlurmdTimeout=<seconds>` and `SlurmctldTimeout=<seconds>` at the end of "
    "/sched/<cluster>/site_specific.conf, which the new VM keeps and its slurm.conf includes last), then "
    "`sudo scontrol reconfigure`: if a timeout is reached, nodes may be marked DOWN and their jobs killed "
    f"({UPGRADES_GUIDE}, slurmctld step 1)"
)
# A new scheduler VM may answer on another address, and a running slurmd does not look for it. cyclecloud-slurm's
# install writes `SlurmCtldHost=<hostname>(<private IP>)` with the VM's own address (Azure/cyclecloud-slurm@50e6739
# azure-slurm-install/install.py l.69 `self.ipv4 = config["ipaddress"]`, l.536 `"slurmctldhost":
# f"{s.hostname}({s.ipv4})"`; templates/slurm.conf.template l.79) into /sched/<cluster>/slurm.conf, which every node
# links as /etc/slurm/slurm.conf (install.py l.648-660, `_complete_install_all`). "By default, virtual machines will
# receive a dynamically-assigned private IP address in Azure" unless the node's network-interface sets `PrivateIp`
# (learn.microsoft.com/azure/cyclecloud/how-to/network-security, "Assigning a Private IP Address";
# MicrosoftDocs/azure-docs@4df484e articles/cyclecloud/how-to/network-security.md), which neither the stock
# templates/slurm.txt (50e6739 l.131-132, AssociatePublicIpAddress only) nor templates/cyclecloud/slurm-cluster.txt.j2
# sets. `scontrol reconfigure`: "Instruct all slurmctld and slurmd daemons to re-read the configuration file. This
# mechanism can be used to modify configuration parameters set in slurm.conf(5) without interrupting running jobs";
# `scontrol ping`: "Ping the primary and secondary slurmctld daemon and report if they are responding"
# (SchedMD/slurm@ed147cc, tag slurm-25-11-5-1, doc/man/man1/scontrol.1 l.277-280, l.377-380), which prints
# "Slurmctld(%s) at %s is %s" with "UP" or "DOWN" (src/scontrol/scontrol.c l.589, l.614). So the reconfigure comes
# as soon as the new slurmctld answers, before the check that a job starts and finishes (TIMEOUTS_RESTORED).
CTLD_ANNOUNCED = (
    "as soon as `scontrol ping` on the new scheduler reports its slurmctld UP: `sudo scontrol reconfigure` there, "
    "which makes every running Slurm daemon (slurmctld, each node's slurmd) re-read slurm.conf, whose SlurmctldHost "
    "is now the new VM's private IP (cyclecloud-slurm writes the VM's own address; CycleCloud assigns it "
    "dynamically, so it may differ from the old scheduler's); until then a running node keeps the address it read "
    "at start "
    "(scontrol(1), reconfigure)"
)
TIMEOUTS_RESTORED = (
    "once the new scheduler talks to the nodes and a job starts and finishes, restore the timeouts: remove the two "
    "lines from /sched/<cluster>/site_specific.conf (cyclecloud-slurm's slurm.conf has SlurmctldTimeout=30 and "
    f"Slurm's default SlurmdTimeout is 300), then `sudo scontrol reconfigure` ({UPGRADES_GUIDE}, slurmctld steps 8-9)"
)


def _triple(data: dict[str, Any]) -> tuple[str, str, str] | None:
    cc = data.get("compute", {}).get("cyclecloud", {})
    values = tuple(str(cc.get(f, "")) for f in FIELDS)
    return (values[0], values[1], values[2]) if all(values) else None


def _describe(key: tuple[str, str, str]) -> str:
    return f"CycleCloud {key[0]} + cyclecloud-slurm {key[1]} + Slurm {key[2]}"


def stack_upgrade(
    before: dict[str, Any], after: dict[str, Any], racks: Mapping[str, int] | None = None
) -> StackUpgrade | None:
    """None when the triple is unchanged (or either side has none). `racks`: the rack-scale partitions and their racks
    (hpclz.plan.racks.rack_partitions), whose nodes are replaced whole instead of rolled."""
    old_key, new_key = _triple(before), _triple(after)
    if old_key is None or new_key is None or old_key == new_key:
        return None
    old, new = find(*old_key), find(*new_key)
    common = {"source": _describe(old_key), "target": _describe(new_key), "source_doc": UPGRADES_GUIDE}
    if old is None or new is None:
        unknown = _describe(old_key if old is None else new_key)
        return StackUpgrade(**common, allowed=False, reason=f"{unknown} is not in hpclz's table of triples")
    road = upgrade_path(old, new)
    if road is None or not new.renderable:
        return StackUpgrade(**common, allowed=False, reason=_no_road(old, new))
    if len(road) > 1:
        return StackUpgrade(
            **common,
            allowed=False,
            reason=_too_far(old, new),
            road=[t.describe() for t in road],
        )
    partitions = [str(p.get("name")) for p in after.get("compute", {}).get("partitions", [])]
    accounting = after.get("compute", {}).get("accounting", {}).get("mode", "disabled") != "disabled"
    images = (server_image(before), server_image(after))
    return StackUpgrade(
        **common,
        allowed=True,
        reason=f"Slurm {slurm_major(old.slurm)} -> {slurm_major(new.slurm)} is within the window",
        road=[new.describe()],
        steps=_steps(old, new, partitions, accounting, images, racks or {}),
        replaces_server=old.cyclecloud != new.cyclecloud and not _in_place(images),
    )


def _in_place(images: tuple[str | None, str | None]) -> bool:
    return images[0] is not None and images[0] == images[1]


def _too_far(old: StackTriple, new: StackTriple) -> str:
    distance = skew(old.slurm, new.slurm)
    return (
        f"Slurm {slurm_major(old.slurm)} -> {slurm_major(new.slurm)} skips {distance} major releases; a Slurm "
        f"{slurm_major(new.slurm)} daemon accepts the {window(new.slurm)} previous ones only"
    )


def _no_road(old: StackTriple, new: StackTriple) -> str:
    if not new.renderable:
        return f"{new.describe()} is an upgrade source only, never a target"
    distance = skew(old.slurm, new.slurm)
    if distance is not None and distance < 0:
        return f"Slurm {old.slurm} -> {new.slurm} goes back a release: Slurm upgrades only forward"
    return f"no road of supported triples leads from {old.describe()} to {new.describe()}"


def server_image(data: dict[str, Any]) -> str | None:
    """The image the CycleCloud server of a config boots, as render picks it (render/components.py
    `cyclecloud_image`): the given URN, else the Marketplace image of `image_release`, else of `version`."""
    cc = data.get("compute", {}).get("cyclecloud", {})
    if cc.get("image"):
        return str(cc["image"])
    return marketplace_image(str(cc.get("image_release") or cc.get("version", "")))


def _server_steps(old: StackTriple, new: StackTriple, images: tuple[str | None, str | None]) -> list[str]:
    """CycleCloud's own step: in place while the server keeps its image, else a replace that keeps users and nodes."""
    if _in_place(images):
        # learn.microsoft.com/azure/cyclecloud/how-to/upgrade-and-migrate: "You can upgrade the Azure CycleCloud
        # application in place"; "CycleCloud is unavailable while the upgrade happens. The upgrade usually takes 2-3
        # minutes"; running clusters keep running, without autoscale meanwhile.
        return [
            f"CycleCloud {old.cyclecloud} -> {new.cyclecloud} in place: hpclz deploy updates the server's userData; "
            f"hpclz-cluster-sync runs `yum -y upgrade cyclecloud8-{new.cyclecloud}` from packages.microsoft.com, "
            "reinstalls the CLI and imports the cluster again with cyclecloud-slurm "
            f"{new.project}. The server keeps its database, its users' UIDs and its nodes; CycleCloud is unavailable "
            "for 2-3 minutes, no node autoscales meanwhile"
        ]
    keep = (
        f" (to keep the server and upgrade in place instead, set compute.cyclecloud.image_release: {old.cyclecloud})"
        if marketplace_image(old.cyclecloud) == images[0] and images[0] is not None
        else ""
    )
    return [
        *before_replace(),
        f"CycleCloud {old.cyclecloud} -> {new.cyclecloud}: hpclz deploy --replace {SERVER} recreates the server from "
        f"Marketplace image version {new.image_version}, with an empty database{keep}; it imports the users with "
        f"their UIDs, then the cluster from userData with cyclecloud-slurm {new.project}",
    ]


def _steps(
    old: StackTriple,
    new: StackTriple,
    partitions: list[str],
    accounting: bool,
    images: tuple[str | None, str | None],
    racks: Mapping[str, int],
) -> list[str]:
    # Without a new server the scheduler and login nodes keep running through the deploy: each gets the new Slurm
    # only as a new VM (NODE_REPLACED). A replaced server comes after `terminate_cluster` (before_replace) and starts
    # the cluster again, every node of it a new VM: the backups come before all of that.
    cluster_restarted = old.cyclecloud != new.cyclecloud and not _in_place(images)
    steps: list[str] = []
    if cluster_restarted:
        if accounting:
            steps.append(_accounting_step(old, new, "now, before the cluster is terminated below"))
        steps.append(
            f"slurmctld {old.slurm} -> {new.slurm}, on the scheduler: back up StateSaveLocation "
            f"({STATE_SAVE}) now; the new server below starts the scheduler node again as a new VM, with Slurm "
            f"{new.slurm}"
        )
        steps.extend(_server_steps(old, new, images))
    else:
        if old.cyclecloud != new.cyclecloud:
            steps.extend(_server_steps(old, new, images))
        elif old.project != new.project:
            steps.append(
                f"cyclecloud-slurm {old.project} -> {new.project}: hpclz deploy; hpclz-cluster-sync uploads the new "
                "project and imports the cluster again"
            )
        # Only here: a replaced server ends every job first (before_replace), so no timeout keeps one alive.
        steps.append(TIMEOUTS_RAISED)
        if accounting:
            steps.append(_accounting_step(old, new, "before the next step replaces that node"))
        steps.append(
            f"slurmctld {old.slurm} -> {new.slurm}, on the scheduler: back up StateSaveLocation, then "
            + NODE_REPLACED.format(node="scheduler", slurm=new.slurm, old=old.slurm)
            + SCHED_KEPT
        )
        steps += [CTLD_ANNOUNCED, TIMEOUTS_RESTORED]
    steps.extend(
        f"slurmd {old.slurm} -> {new.slurm} on partition {p}: "
        + (rack_replacement(p, racks[p]) if p in racks else ROLL.format(p=p))
        for p in partitions
    )
    steps.append(
        f"login nodes and clients {old.slurm} -> {new.slurm} last: "
        + (
            f"the new server starts the login nodes again, with Slurm {new.slurm}"
            if cluster_restarted
            else "for each login node, " + NODE_REPLACED.format(node="<login node>", slurm=new.slurm, old=old.slurm)
        )
    )
    return [f"{n}. {text}" for n, text in enumerate(steps, start=1)]


def _accounting_step(old: StackTriple, new: StackTriple, when: str) -> str:
    # cyclecloud-slurm runs slurmdbd on the scheduler node: slurmdbd.conf's DbdHost is the scheduler's own hostname
    # (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.417-436). upgrades.html, "slurmdbd
    # (Accounting)": "the upgraded daemon may be unresponsive for tens of minutes while it updates the database to the
    # new schema".
    return (
        f"slurmdbd {old.slurm} -> {new.slurm} first: it runs on the scheduler node, so it moves with that node; back "
        f"up the accounting database {when}, and let slurmdbd {new.slurm} finish converting it (it may not answer for "
        "tens of minutes) before the partitions roll"
    )


def annotate(changes: list[ConfigChange], upgrade: StackUpgrade | None) -> None:
    """Give the triple's field changes the upgrade's verdict: refused, or the drain its steps need."""
    if upgrade is None:
        return
    for change in changes:
        if change.path not in PATHS or change.kind is not Action.MODIFY:
            continue
        if upgrade.allowed:
            floor = Policy.REPLACE if upgrade.replaces_server else Policy.DRAIN_PARTITION
            policy = worst([change.verdict.policy, floor])
            action = "; ".join(upgrade.steps)
        else:
            policy = Policy.NOT_ALLOWED
            action = (
                "deploy one triple at a time, in this order: " + " -> ".join(upgrade.road)
                if upgrade.road
                else "pick a triple hpclz supports (hpclz validate lists them)"
            )
        change.verdict = Verdict(
            policy=policy,
            reason=f"{upgrade.source} -> {upgrade.target}: {upgrade.reason}",
            action_needed=action,
            source=upgrade.source_doc,
        )
