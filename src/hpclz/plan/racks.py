"""Rack-scale partitions in whole NVLink domains, for `hpclz plan` to show racks beside nodes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from hpclz.catalog import load_catalog
from hpclz.config.root import LandingZoneConfig


class PartitionRacks(BaseModel):
    """A partition of a size whose NVLink domain spans VMs (ND GB200 v6, ND GB300 v6: 18 VMs, catalog
    nvlink_domain_vms): how many racks its max_nodes is, and the nodes left over when it is not whole racks
    (validation refuses that, HPCLZ-CMP-071)."""

    model_config = ConfigDict(frozen=True)

    partition: str
    vm_size: str
    nodes: int
    nodes_per_rack: int
    racks: int
    part_rack_nodes: int


def partition_racks(config: LandingZoneConfig) -> list[PartitionRacks]:
    out = []
    for p in config.compute.partitions:
        sku = load_catalog().sku(p.vm_size)
        if sku is None or sku.nvlink_domain_vms is None:
            continue
        racks, rest = divmod(p.max_nodes, sku.nvlink_domain_vms)
        out.append(
            PartitionRacks(
                partition=p.name,
                vm_size=p.vm_size,
                nodes=p.max_nodes,
                nodes_per_rack=sku.nvlink_domain_vms,
                racks=racks,
                part_rack_nodes=rest,
            )
        )
    return out


# A rack-scale partition is kept out of Slurm's power saving (`SuspendExcParts`, which cyclecloud-slurm's README asks
# for: Azure/cyclecloud-slurm@50e6739 README.md l.375-379, and hpclz-topology writes) and its racks are brought up
# whole by cyclecloud-slurm's scale_m1 (README.md l.368-452: `create_reservation`, then `power_up --racks N`, which
# "can only power up reserved and powered down nodes", scale_m1/scale_to_n_nodes.py l.248-259). A node rolled alone
# would come back, if at all, as part of a rack, which is no block and gets no job (docs/gb-racks.md). So such a
# partition is replaced whole: its nodes powered down by name once their jobs end (scale_m1's own prune powers nodes
# of that partition down the same way, `scontrol update NodeName=... State=POWER_DOWN`, scale_to_n_nodes.py
# l.335-338; POWER_DOWN_ASAP "will drain the node and mark it for power down. Currently running jobs will complete
# first", scontrol(1)), then its racks powered up from the new definition with scale_m1.
RACK_REPLACE = (
    "partition {p} is rack-scale, out of Slurm's power saving (SuspendExcParts): its {n} rack(s) are replaced whole, "
    "not rolled node by node: on the scheduler, scontrol update NodeName=<every node of {p}> State=POWER_DOWN_ASAP "
    "Reason='hpclz: roll: new node definition'; once hpclz nodes status CONFIG --partition {p} --wait SECONDS says "
    "every node is powered down: scale_m1 create_reservation -p {p} (a scale_m1 reservation left from bring-up is "
    "updated or deleted first: create_reservation makes one of that name); scale_m1 power_up --racks {n}; then "
    "release the nodes that came up from the scale_m1 reservation, which holds them for root until then "
    "(docs/gb-racks.md, Replacing the racks)"
)


def rack_partitions(config: LandingZoneConfig) -> dict[str, int]:
    """Each rack-scale partition of the config and its racks (a part rack, refused by HPCLZ-CMP-071, counts as one)."""
    return {r.partition: r.racks + (1 if r.part_rack_nodes else 0) for r in partition_racks(config)}


def rack_replacement(partition: str, racks: int) -> str:
    """How a rack-scale partition gets onto a new node definition (`hpclz plan`'s action, `hpclz nodes roll`'s
    refusal): the one path that keeps its racks whole."""
    return RACK_REPLACE.format(p=partition, n=racks)
