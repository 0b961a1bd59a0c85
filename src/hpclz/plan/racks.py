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
