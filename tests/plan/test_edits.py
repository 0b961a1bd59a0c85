"""The table of config edits: for each, the change set an offline plan shows and what it costs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from rich.console import Console

from hpclz.cli.views.changeset import print_changeset
from hpclz.plan.changeset import Action, ChangeSet, Policy, worst
from hpclz.plan.config_diff import config_changes
from hpclz.plan.offline import offline_changeset
from hpclz.render.build import build_plan
from tests.plan.support import applied_state, edited, preset

Edit = Callable[[dict[str, Any]], None]


def _partition(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in data["compute"]["partitions"] if p["name"] == name)


def add_partition(d: dict[str, Any]) -> None:
    d["compute"]["partitions"].append({"name": "viz", "vm_size": "Standard_NV36ads_A10_v5", "max_nodes": 2})


def remove_partition(d: dict[str, Any]) -> None:
    d["compute"]["partitions"] = [p for p in d["compute"]["partitions"] if p["name"] != "hbv3"]


def reorder_partitions(d: dict[str, Any]) -> None:
    d["compute"]["partitions"].reverse()


def grow_lustre(d: dict[str, Any]) -> None:
    d["storage"]["lustre"]["capacity_tib"] = 96


def shrink_lustre(d: dict[str, Any]) -> None:
    d["storage"]["lustre"]["capacity_tib"] = 32


def lustre_sku(d: dict[str, Any]) -> None:
    d["storage"]["lustre"]["sku"] = "AMLFS-Durable-Premium-500"


def gpu_sku(d: dict[str, Any]) -> None:
    _partition(d, "gpu")["vm_size"] = "Standard_ND96isr_H200_v5"


def grow_max_nodes(d: dict[str, Any]) -> None:
    _partition(d, "gpu")["max_nodes"] = 8


def scratch_mount(d: dict[str, Any]) -> None:
    _partition(d, "hbv4")["nvme_scratch"]["mount_point"] = "/mnt/scratch"


def grow_address_space(d: dict[str, Any]) -> None:
    d["network"]["vnet"]["address_space"].append("10.21.0.0/16")


def shrink_address_space(d: dict[str, Any]) -> None:
    d["network"]["vnet"]["address_space"] = ["10.20.0.0/20"]


def remove_container(d: dict[str, Any]) -> None:
    d["storage"]["blob"]["containers"] = [c for c in d["storage"]["blob"]["containers"] if c["name"] != "checkpoints"]


def _checkpoints(d: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in d["storage"]["blob"]["containers"] if c["name"] == "checkpoints")


def make_checkpoints_immutable(d: dict[str, Any]) -> None:
    _checkpoints(d)["immutable"] = True


def set_retention(d: dict[str, Any]) -> None:
    _checkpoints(d)["retention_days"] = 7


def remove_lustre(d: dict[str, Any]) -> None:
    d["storage"]["lustre"] = {"mode": "disabled"}


def replication_grs_to_gzrs(d: dict[str, Any]) -> None:
    d["storage"]["blob"]["replication"] = "GZRS"


def replication_grs_to_lrs(d: dict[str, Any]) -> None:
    d["storage"]["blob"]["replication"] = "LRS"


def grow_shared_home(d: dict[str, Any]) -> None:
    d["storage"]["shared"]["home_gib"] = 2048


def edit_tags(d: dict[str, Any]) -> None:
    d["metadata"]["tags"]["workload"] = "seismic-fwi"


def rename_zone(d: dict[str, Any]) -> None:
    d["metadata"]["name"] = "energy2"


@dataclass
class Row:
    edit: Edit
    config: list[tuple[str, Action, Policy]]
    resources: dict[str, tuple[Action, Policy]] = field(default_factory=dict)  # resource name -> expected
    action_needed: str = ""  # words the engineer must be told
    worst: Policy = Policy.IN_PLACE


# The CycleCloud server: partition edits reach it through userData (in place, re-imported), never customData.
CYCLECLOUD_VM = {"vm-energy-cc-prod-scus": (Action.MODIFY, Policy.IN_PLACE)}

TABLE: dict[str, Row] = {
    "add a partition": Row(add_partition, [("compute.partitions[viz]", Action.CREATE, Policy.IN_PLACE)], CYCLECLOUD_VM),
    "remove a partition": Row(
        remove_partition,
        [("compute.partitions[hbv3]", Action.DELETE, Policy.DRAIN_PARTITION)],
        CYCLECLOUD_VM,
        action_needed="drain partition hbv3",
        worst=Policy.DRAIN_PARTITION,
    ),
    "reorder partitions (matched by name)": Row(reorder_partitions, []),
    # Azure grows Managed Lustre in place through an expansion job (az amlfs expansion create), which hpclz does
    # not create: refused with the way to do it, never a replacement that would lose the data.
    "grow Lustre": Row(
        grow_lustre,
        [("storage.lustre.capacity_tib", Action.MODIFY, Policy.NOT_ALLOWED)],
        {"amlfs-energy-prod-scus": (Action.MODIFY, Policy.NOT_ALLOWED)},
        action_needed="az amlfs expansion create --new-storage-capacity 96",
        worst=Policy.NOT_ALLOWED,
    ),
    "shrink Lustre": Row(
        shrink_lustre,
        [("storage.lustre.capacity_tib", Action.MODIFY, Policy.REPLACE_DATA)],
        {"amlfs-energy-prod-scus": (Action.REPLACE, Policy.REPLACE_DATA)},
        action_needed="copy it",
        worst=Policy.REPLACE_DATA,
    ),
    "change the Lustre SKU": Row(
        lustre_sku,
        [("storage.lustre.sku", Action.MODIFY, Policy.REPLACE_DATA)],
        {"amlfs-energy-prod-scus": (Action.REPLACE, Policy.REPLACE_DATA)},
        worst=Policy.REPLACE_DATA,
    ),
    "change a partition's VM size": Row(
        gpu_sku,
        [("compute.partitions[gpu].vm_size", Action.MODIFY, Policy.DRAIN_PARTITION)],
        CYCLECLOUD_VM,
        action_needed="drain partition gpu first",
        worst=Policy.DRAIN_PARTITION,
    ),
    "move a partition's NVMe scratch (inherits the block's policy)": Row(
        scratch_mount,
        [("compute.partitions[hbv4].nvme_scratch.mount_point", Action.MODIFY, Policy.DRAIN_PARTITION)],
        CYCLECLOUD_VM,
        action_needed="drain partition hbv4 first",
        worst=Policy.DRAIN_PARTITION,
    ),
    "grow a partition": Row(
        grow_max_nodes, [("compute.partitions[gpu].max_nodes", Action.MODIFY, Policy.IN_PLACE)], CYCLECLOUD_VM
    ),
    "grow the address space": Row(
        grow_address_space,
        [("network.vnet.address_space", Action.MODIFY, Policy.IN_PLACE)],
        {"vnet-energy-prod-scus": (Action.MODIFY, Policy.IN_PLACE)},
    ),
    "shrink the address space below the subnets": Row(
        shrink_address_space,
        [("network.vnet.address_space", Action.MODIFY, Policy.NOT_ALLOWED)],
        {"vnet-energy-prod-scus": (Action.MODIFY, Policy.NOT_ALLOWED)},
        action_needed="add the new range first",
        worst=Policy.NOT_ALLOWED,
    ),
    "remove a blob container": Row(
        remove_container,
        [("storage.blob.containers[checkpoints]", Action.DELETE, Policy.REPLACE_DATA)],
        {"stenergyprodscuseb80/default/checkpoints": (Action.DELETE, Policy.REPLACE_DATA)},
        worst=Policy.REPLACE_DATA,
    ),
    "make a container immutable (only at creation)": Row(
        make_checkpoints_immutable,
        [("storage.blob.containers[checkpoints].immutable", Action.MODIFY, Policy.NOT_ALLOWED)],
        {"stenergyprodscuseb80/default/checkpoints": (Action.MODIFY, Policy.NOT_ALLOWED)},
        action_needed="copy the checkpoints to it",
        worst=Policy.NOT_ALLOWED,
    ),
    "set a seal retention (reaches later seals only)": Row(
        set_retention,
        [("storage.blob.containers[checkpoints].retention_days", Action.CREATE, Policy.IN_PLACE)],
        action_needed="a locked one cannot be shortened",
    ),
    "remove Lustre": Row(
        remove_lustre,
        [("storage.lustre", Action.MODIFY, Policy.REPLACE_DATA)],
        {"amlfs-energy-prod-scus": (Action.DELETE, Policy.REPLACE_DATA)},
        worst=Policy.REPLACE_DATA,
    ),
    # energy keeps its blobs GRS (Archive needs LRS/GRS/RA-GRS: HPCLZ-STO-013): GRS -> LRS drops the geo copy in
    # place; GRS -> GZRS adds zone redundancy, a conversion.
    "replication GRS -> LRS": Row(
        replication_grs_to_lrs,
        [("storage.blob.replication", Action.MODIFY, Policy.IN_PLACE)],
        {"stenergyprodscuseb80": (Action.MODIFY, Policy.IN_PLACE)},
    ),
    "replication GRS -> GZRS": Row(
        replication_grs_to_gzrs,
        [("storage.blob.replication", Action.MODIFY, Policy.NOT_ALLOWED)],
        {"stenergyprodscuseb80": (Action.MODIFY, Policy.NOT_ALLOWED)},
        action_needed="conversion",
        worst=Policy.NOT_ALLOWED,
    ),
    # A premium share's provisioned size can grow in place (shareQuota), the share and its data stay.
    "grow the shared home share": Row(
        grow_shared_home,
        [("storage.shared.home_gib", Action.MODIFY, Policy.IN_PLACE)],
        {"stenergynfsprodscuseb80/default/home": (Action.MODIFY, Policy.IN_PLACE)},
    ),
    "edit tags": Row(
        edit_tags,
        [("metadata.tags.workload", Action.MODIFY, Policy.IN_PLACE)],
        {
            "vnet-energy-prod-scus": (Action.MODIFY, Policy.IN_PLACE),
            "stenergyprodscuseb80": (Action.MODIFY, Policy.IN_PLACE),
        },
    ),
    "rename the landing zone": Row(
        rename_zone,
        [("metadata.name", Action.MODIFY, Policy.NOT_ALLOWED)],
        action_needed="new landing zone",
        worst=Policy.NOT_ALLOWED,
    ),
}


def plan_for(row: Row) -> ChangeSet:
    base = preset("energy")
    state = applied_state(base)
    config = edited(base, row.edit)
    changes = offline_changeset(build_plan(config), state)
    changes.config_changes = config_changes(state.applied_config, config)
    return changes


@pytest.mark.parametrize("case", sorted(TABLE))
def test_config_level_changes_and_their_cost(case: str) -> None:
    row = TABLE[case]
    changes = plan_for(row)
    assert [(c.path, c.kind, c.verdict.policy) for c in changes.config_changes] == row.config
    assert worst([c.verdict.policy for c in changes.config_changes]) is row.worst
    needed = " ".join(c.verdict.action_needed + " " + c.verdict.reason for c in changes.config_changes)
    assert row.action_needed in needed


@pytest.mark.parametrize("case", sorted(name for name, row in TABLE.items() if row.resources))
def test_resource_level_changes_and_their_cost(case: str) -> None:
    row = TABLE[case]
    by_name = {r.name: r for r in plan_for(row).resources}
    for name, (action, policy) in row.resources.items():
        assert (by_name[name].action, by_name[name].verdict.policy) == (action, policy), name


def test_data_loss_and_blocked_changes_are_named() -> None:
    lustre = plan_for(TABLE["shrink Lustre"])
    assert "storage.lustre.capacity_tib" in lustre.data_loss
    assert any("amlfs-energy-prod-scus" in item for item in lustre.data_loss)
    assert lustre.blocked == []
    grown = plan_for(TABLE["grow Lustre"])
    assert grown.data_loss == [] and "storage.lustre.capacity_tib" in grown.blocked
    shrink = plan_for(TABLE["shrink the address space below the subnets"])
    assert "network.vnet.address_space" in shrink.blocked


PARTITION_EDITS = [
    "add a partition",
    "remove a partition",
    "change a partition's VM size",
    "move a partition's NVMe scratch (inherits the block's policy)",
    "grow a partition",
]


@pytest.mark.parametrize("case", PARTITION_EDITS)
def test_partition_edits_change_only_userdata_and_are_never_blocked(case: str) -> None:
    changes = plan_for(TABLE[case])
    assert changes.blocked == []
    # The portal, where there is one, follows the partitions in its userData too (its proxy's host_regex), in place.
    portal = [r for r in changes.changed_resources if "-ood-" in r.name]
    (vm,) = [r for r in changes.changed_resources if r not in portal]
    # userData is shown as the cluster it carries (hpclz.plan.decode); nothing else on the VM changes.
    assert vm.changes and all(c.path.startswith("properties.userData:cluster.") for c in vm.changes)
    assert "re-imports the Slurm cluster" in vm.verdict.reason
    if case in ("add a partition", "remove a partition"):  # energy has a portal; its host_regex names partitions
        assert len(portal) == 1
    for r in portal:
        assert r.verdict.policy is Policy.IN_PLACE and "hpclz-portal-proxy" in r.verdict.reason
        assert r.changes and all(c.path.startswith("properties.userData") for c in r.changes)


def test_a_changed_cyclecloud_version_replaces_the_server_and_is_blocked_off_the_table() -> None:
    """The version picks the Marketplace image, which a VM cannot swap in place: the server is replaced. 8.9.0 with
    cyclecloud-slurm 4.0.9 is no row of the triple table, so the config change is refused (hpclz.plan.upgrade)."""

    def upgrade(d: dict[str, Any]) -> None:
        d["compute"]["cyclecloud"]["version"] = "8.9.0"

    changes = plan_for(Row(upgrade, []))
    (vm,) = changes.changed_resources
    assert vm.verdict.policy is Policy.REPLACE
    paths = [c.path for c in vm.changes]
    assert "properties.storageProfile.imageReference.version" in paths
    assert "properties.osProfile.customData:decoded" not in paths  # the boot script knows no version
    assert changes.blocked == ["compute.cyclecloud.version"]


def test_tag_edit_changes_only_tags_and_replaces_nothing() -> None:
    changes = plan_for(TABLE["edit tags"])
    assert changes.summary.replace == changes.summary.destroy == changes.summary.add == 0
    assert changes.summary.change > 5
    # The CycleCloud server also hands the new tag to every node it creates: the cluster template's node defaults
    # carry the zone's tags, which the zone's own "require a tag" policies demand of each node (an in-place edit
    # of its userData, no replacement).
    to_nodes = "properties.userData:cluster.template.node[defaults].Tags.workload"
    for resource in changes.changed_resources:
        expected = ["tags.workload", to_nodes] if resource.name == "vm-energy-cc-prod-scus" else ["tags.workload"]
        assert [c.path for c in resource.changes] == expected, resource.name


def test_no_edit_means_no_changes() -> None:
    base = preset("energy")
    changes = offline_changeset(build_plan(base), applied_state(base))
    changes.config_changes = config_changes(applied_state(base).applied_config, base)
    assert not changes.has_changes
    assert changes.summary.line() == "Plan: 0 to add, 0 to change, 0 to replace, 0 to destroy."


def _text(changes: ChangeSet) -> str:
    console = Console(width=300, no_color=True, record=True, force_terminal=False)
    print_changeset(console, changes)
    return console.export_text()


def test_printed_plan_tells_the_cost() -> None:
    text = _text(plan_for(TABLE["shrink Lustre"]))
    assert "-/+ Microsoft.StorageCache/amlFilesystems amlfs-energy-prod-scus" in text
    assert "properties.storageCapacityTiB: 48 -> 32  # forces replacement" in text
    assert "DATA LOSS" in text
    assert "Plan: 0 to add, 0 to change, 1 to replace, 0 to destroy." in text
    resized = plan_for(TABLE["change a partition's VM size"])
    text = _text(resized)
    assert (
        'compute.partitions[gpu].vm_size: "Standard_ND96isr_H100_v5" -> "Standard_ND96isr_H200_v5"  '
        "(replace nodes; drain partition gpu first; after deploy, once hpclz-cluster-sync has imported the cluster"
    ) in text
    assert "Impact: drain partition gpu first" in text
    # Slurm's CPUs, RealMemory and Gres for the partition come only from `azslurm scale`, after the re-import
    # (Azure/cyclecloud-slurm@50e6739 azure-slurm/slurmcc/cli.py l.632-697, l.868-872; README.md l.72-78), and
    # before the nodes roll onto the new size.
    (action,) = [c.verdict.action_needed for c in resized.config_changes if c.path == "compute.partitions[gpu].vm_size"]
    scale = action.index(
        "run `sudo azslurm scale` on the scheduler: it rewrites partition gpu's CPUs, RealMemory and Gres"
    )
    assert (
        action.index("has imported the cluster again")
        < scale
        < action.index("only then roll its nodes: hpclz nodes roll")
    )
    # Nodes are rebuilt, not patched (docs/patching.md): scontrol(1)'s POWER_DOWN_ASAP lets running jobs finish.
    assert "hpclz nodes roll CONFIG --partition gpu (State=POWER_DOWN_ASAP: running jobs finish first)" in text
    assert "then hpclz nodes status CONFIG --partition gpu --wait SECONDS" in text
    assert "~ Microsoft.Compute/virtualMachines vm-energy-cc-prod-scus" in text
    assert "NOT ALLOWED" not in text
    assert "Impact: Compute/virtualMachines vm-energy-cc-prod-scus: after the re-import, run `azslurm scale`" in text


def test_a_new_rack_size_runs_azslurm_scale_before_the_racks_are_replaced() -> None:
    """A rack-scale partition's new VM size also needs `azslurm scale` (its node lines: cli.py l.868-872) before its
    racks come up again (Azure/cyclecloud-slurm@50e6739 README.md l.72-78)."""
    base = preset("ai-training")

    def size(d: dict[str, Any]) -> None:
        _partition(d, "gb300")["vm_size"] = "Standard_ND128isr_NDR_GB200_v6"

    action = {
        c.path: c.verdict.action_needed for c in config_changes(applied_state(base).applied_config, edited(base, size))
    }
    rack = action["compute.partitions[gb300].vm_size"]
    assert rack.index("run `sudo azslurm scale` on the scheduler") < rack.index(
        "only then replace its racks: partition"
    )
    assert rack.index("only then replace its racks") < rack.index("scale_m1 power_up --racks 2")
    assert "hpclz nodes roll" not in rack


def test_a_rack_partition_is_planned_as_replaced_whole_not_rolled() -> None:
    """ai-training's gb300 is kept out of Slurm's power saving (SuspendExcParts, hpclz-topology) and `nodes roll`
    refuses its nodes: a new image plans the whole-rack path (scale_m1, Azure/cyclecloud-slurm@50e6739 README.md
    l.368-452), while its H100 partition keeps the roll."""
    base = preset("ai-training")

    def images(d: dict[str, Any]) -> None:
        _partition(d, "gb300")["image"] = "microsoft-dsvm:ubuntu-hpc:2404-gb:24.04.2026010101"
        _partition(d, "h100")["image"] = "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026100101"

    state = applied_state(base)
    changes = offline_changeset(build_plan(edited(base, images)), state)
    changes.config_changes = config_changes(state.applied_config, edited(base, images))
    actions = {c.path: c.verdict.action_needed for c in changes.config_changes}
    rack = actions["compute.partitions[gb300].image"]
    assert "hpclz nodes roll" not in rack
    assert "partition gb300 is rack-scale, out of Slurm's power saving (SuspendExcParts)" in rack
    assert "scontrol update NodeName=<every node of gb300> State=POWER_DOWN_ASAP" in rack
    assert "scale_m1 create_reservation -p gb300 (" in rack and "power_up --racks 2;" in rack  # 36 nodes, 18 a rack
    assert "release the nodes that came up from the scale_m1 reservation" in rack
    assert "hpclz nodes roll CONFIG --partition h100" in actions["compute.partitions[h100].image"]
    text = _text(changes)
    assert "scale_m1 power_up --racks 2" in text and "hpclz nodes roll CONFIG --partition gb300" not in text
