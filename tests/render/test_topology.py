"""`render --diagram` draws the network and the cluster: hub, VNet, subnets with their ranges, what sits in each
(service VMs, partitions, Bastion, private endpoints, Lustre, the database) and what the nodes mount."""

from __future__ import annotations

from hpclz.render.build import build_plan
from hpclz.render.topology import dot, mermaid, topology
from tests.plan.support import edited, preset


def test_energy_network_holds_subnets_nodes_endpoints_and_mounts() -> None:
    config = preset("energy")
    t = topology(config, build_plan(config))
    boxes = {b.key: b for b in t.subnets}
    assert boxes["snet_admin"].label == "admin 10.20.0.0/24"
    assert ("partition_gpu", "partition gpu: 0-4 x Standard_ND96isr_H100_v5") in boxes["snet_compute"].items
    assert ("lustre", "Managed Lustre 48 TiB") in boxes["snet_lustre"].items
    endpoints = dict(boxes["snet_private_endpoints"].items)
    assert endpoints["pe_pep_energy_kv_prod_scus"] == "private endpoint pep-energy-kv-prod-scus (vault)"
    assert ("partition_gpu", "lustre", "/lustre") in t.links and ("login", "shared", "/shared") in t.links
    # Egress through the NAT gateway; the hub is peered (users arrive from it), with no route to its firewall.
    assert ("snet_compute", "internet", "NAT") in t.links
    assert [link for link in t.links if link[1] == "hub"] == [("vnet", "hub", "peering")]
    text = mermaid(t)
    assert text.startswith("flowchart LR") and '  partition_gpu -- "/lustre" --> lustre' in text
    assert 'subgraph snet_compute["compute 10.20.16.0/20"]' in text
    graph = dot(t)
    assert 'subgraph "cluster_snet_lustre"' in graph and '"partition_gpu" -> "lustre" [label="/lustre"];' in graph


def test_hub_peering_spot_and_no_nat() -> None:
    config = preset("finance")
    t = topology(config, build_plan(config))
    assert ("vnet", "hub", "peering") in t.links
    assert dict(t.outside)["hub"] == "hub VNet 10.0.0.0/16"
    compute = next(b for b in t.subnets if b.key == "snet_compute")
    assert any(label.endswith(", spot") for _key, label in compute.items)
    assert '"vnet" -> "hub" [label="peering", ltail="cluster_vnet"];' in dot(t)


def test_a_partition_added_appears_in_the_picture() -> None:
    def grow(data: dict[str, object]) -> None:
        partitions = data["compute"]["partitions"]  # type: ignore[index]
        partitions.append({**partitions[0], "name": "extra", "max_nodes": 2})

    config = edited(preset("energy"), grow)
    assert "partition extra: 0-2 x " in mermaid(topology(config, build_plan(config)))
