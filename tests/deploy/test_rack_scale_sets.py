"""A rack-scale partition as CycleCloud builds it in the ARM stand-in: scale sets that each hold whole NVLink
domains (racks of 18 VMs), from the cluster template hpclz renders (tests/support/arm_standin/cyclecloud.py)."""

from __future__ import annotations

import json
from typing import Any

from hpclz.catalog import load_catalog
from tests.render.conftest import variant
from tests.support.arm_standin.cyclecloud import NodeSpec, parse_cluster, scale_sets

GB300 = "Standard_ND128isr_GB300_v6"
RACK = 18  # ND GB300 v6: 18 VMs to an NVLink domain (catalog)


def gb300_array(racks: int) -> NodeSpec:
    """ai-training's gb300 nodearray with `racks` racks, as the stand-in's CycleCloud parses the rendered cluster."""

    def grow(data: dict[str, Any]) -> None:
        part = next(p for p in data["compute"]["partitions"] if p["name"] == "gb300")
        part["max_nodes"] = racks * RACK
        data["compute"]["quotas"]["standardNDISRGB300V6Family"] = racks * RACK * 128

    compute = next(d for d in variant("ai-training", grow).deployments if d.component == "compute")
    template = compute.artifacts["cyclecloud/slurm-cluster.txt"]
    parameters = json.loads(compute.artifacts["cyclecloud/slurm-params.json"])
    return next(n for n in parse_cluster(template, parameters) if n.name == "gb300")


def test_every_scale_set_of_a_rack_scale_partition_holds_whole_racks() -> None:
    assert load_catalog().sku(GB300).nvlink_domain_vms == RACK  # type: ignore[union-attr]
    # Two racks fit one scale set; six racks (108 VMs) need two, since a placement group holds at most 100 VMs: 90
    # (five racks) and 18, never 100 and 8, which would leave a rack split across two placement groups.
    for racks, expected in ((2, [36]), (6, [90, 18]), (11, [90, 90, 18])):
        node = gb300_array(racks)
        assert node.settings["MachineType"] == GB300 and node.settings["Azure.SinglePlacementGroup"] == "true"
        sizes = [size for _, size in scale_sets(node, "cc")]
        assert sizes == expected and all(size % RACK == 0 for size in sizes)
