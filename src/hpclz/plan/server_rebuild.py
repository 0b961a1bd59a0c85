"""What a replaced CycleCloud server loses, and the steps that keep it.

A server created again boots Microsoft's Marketplace image with a data disk made from the image (render/components.py
`cyclecloud_image`): CycleCloud's database starts empty. It then knows none of the nodes the old server started, and
would number users again in the order they sign in while their files keep the old owners (docs/entra-login.md, UIDs).
Microsoft's own move of CycleCloud to a new host says: "We recommend that you terminate all clusters before migrating"
(learn.microsoft.com/azure/cyclecloud/how-to/upgrade-and-migrate, "Migrate CycleCloud to a new host"). The users
come back through hpclz-cc-users (templates/cloud-init/cc_users.py): the old server exports names and UIDs to the
locker on every cluster-sync run, and the new one imports them at its first boot, before CycleCloud initializes.
"""

from __future__ import annotations

UPGRADE_GUIDE = "https://learn.microsoft.com/azure/cyclecloud/how-to/upgrade-and-migrate"
# Where the server keeps its users (hpclz.render.cloudinit.USER_RECORDS_BLOB in the locker's hpclz container).
USERS_EXPORT = "the locker's hpclz/cyclecloud-users.json"
SERVER = "Microsoft.Compute/virtualMachines/<CycleCloud VM>"


def before_replace() -> list[str]:
    """The three steps before any deploy that recreates the CycleCloud server."""
    return [
        # scontrol(1): POWER_DOWN_FORCE "Will cancel all jobs on the node, power it down, and reset its state to IDLE";
        # a node left up comes back DOWN under the new server, and `azslurm return_to_idle` resets only POWERED_DOWN
        # nodes (Azure/cyclecloud-slurm@50e6739 azure-slurm/slurmcc/cli.py l.469-476; docs/patching.md step 1).
        "before the server is replaced, on the scheduler: `sudo scontrol update nodename=<every node sinfo -N -o "
        "'%N %t' shows without a trailing ~> state=power_down_force reason='hpclz: CycleCloud server rebuild'`, and "
        "wait until sinfo shows every node powered down (~): a node kept out of power saving (CycleCloud keep-alive, "
        "SuspendTime=INFINITE) otherwise comes back DOWN under the new server, which `azslurm return_to_idle` never "
        "resets (docs/patching.md)",
        "then on the server: `cyclecloud terminate_cluster <cluster>` and wait for its nodes to go "
        "(a new server knows none of the nodes the old one started: terminate all clusters before moving CycleCloud, "
        f"{UPGRADE_GUIDE}); with storage.shared the scheduler's /sched and /shared are on the zone's shares and stay, "
        "without it copy /sched (StateSaveLocation) off first",
        f"check that {USERS_EXPORT} is current (`sudo /opt/hpclz/bin/hpclz-cc-users export` on the server writes it "
        "now): the new server imports those users with their UIDs before anyone signs in",
    ]


def replace_action() -> str:
    """The action of a config change that recreates the CycleCloud server."""
    return (
        "; ".join(before_replace())
        + f"; then hpclz deploy --replace {SERVER}: the new server imports the users, then imports and starts the "
        "cluster from userData"
    )
