"""The network and the cluster as people draw them: the hub it peers with, the VNet and each subnet with its range,
what sits in each subnet (the CycleCloud server, scheduler and login nodes, each partition's nodes, Bastion, the
private endpoints, Lustre, NetApp, the accounting database), and the storage each node mounts, with its path.

One graph, written as Mermaid (`network.mmd`) and Graphviz DOT (`network.dot`); hpclz.render.diagram draws the
images from the DOT where Graphviz is installed. Built from the config and the rendered plan (the private
endpoints it declares), never from Azure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hpclz.config.root import LandingZoneConfig
from hpclz.render.model import DeploymentPlan

NETWORK_STEM = "network"
PRIVATE_ENDPOINT = "microsoft.network/privateendpoints"


@dataclass
class Box:
    key: str
    label: str
    items: list[tuple[str, str]] = field(default_factory=list)  # (key, label)


@dataclass
class Topology:
    title: str
    vnet: Box
    subnets: list[Box]
    outside: list[tuple[str, str]]  # (key, label) beside the VNet: the hub, the Internet, Blob storage
    links: list[tuple[str, str, str]]  # (from key, to key, label)


def _key(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _quote(text: str) -> str:
    return text.replace('"', "'")


def topology(config: LandingZoneConfig, plan: DeploymentPlan) -> Topology:
    network, compute = config.network, config.compute
    subnets = network.vnet.subnets
    boxes: dict[str, Box] = {}
    for role in type(subnets).model_fields:
        subnet = getattr(subnets, role)
        if subnet is not None:
            boxes[role] = Box(f"snet_{role}", f"{subnet.name or role} {subnet.cidr}")
    admin, nodes = boxes["admin"], boxes["compute"]
    admin.items += [
        ("cyclecloud", f"CycleCloud server: {compute.cyclecloud.vm_size}"),
        ("scheduler", f"scheduler: {compute.scheduler.vm_size}"),
        ("login", f"login: {compute.login.count} x {compute.login.vm_size}"),
    ]
    if config.portal.enabled:
        admin.items.append(("portal", f"Open OnDemand portal: {config.portal.vm_size}"))
    for p in compute.partitions:
        spot = ", spot" if p.priority == "spot" else ""
        nodes.items.append((f"partition_{_key(p.name)}", f"partition {p.name}: 0-{p.max_nodes} x {p.vm_size}{spot}"))
    if "bastion" in boxes and network.bastion.enabled:
        boxes["bastion"].items.append(("bastion", f"Bastion ({network.bastion.sku})"))
    if "private_endpoints" in boxes:
        boxes["private_endpoints"].items += _private_endpoints(plan)
    outside: list[tuple[str, str]] = []
    links: list[tuple[str, str, str]] = []
    mounts = _storage(config, boxes, outside)
    for node, _ in [*admin.items[1:3], *nodes.items]:
        links += [(node, target, path) for target, path in mounts]
    if network.hub_peering is not None:
        hub = network.hub_peering
        outside.append(("hub", f"hub VNet {', '.join(map(str, hub.remote_address_space))}"))
        links.append(("vnet", "hub", "peering"))
    if network.nat_gateway.enabled:
        outside.append(("internet", "Internet (outbound through the NAT gateway)"))
        links.append((nodes.key, "internet", "NAT"))
    vnet = network.vnet
    title = f"VNet {', '.join(map(str, vnet.address_space))} ({vnet.mode})"
    return Topology(config.metadata.name, Box("vnet", title), list(boxes.values()), outside, links)


def _private_endpoints(plan: DeploymentPlan) -> list[tuple[str, str]]:
    found = []
    for d in plan.deployments:
        for r in d.resources():
            if str(r.get("type", "")).lower() == PRIVATE_ENDPOINT:
                name = str(r.get("name", ""))
                groups = [
                    g
                    for c in (r.get("properties") or {}).get("privateLinkServiceConnections") or []
                    for g in (c.get("properties") or {}).get("groupIds") or []
                ]
                found.append((f"pe_{_key(name)}", f"private endpoint {name} ({', '.join(groups)})"))
    return found


def _storage(config: LandingZoneConfig, boxes: dict[str, Box], outside: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Storage as boxes where it sits, and (key, mount point) of what the nodes mount."""
    from hpclz.config.storage import ExistingLustre, ExistingNetApp, NewLustre, NewNetApp

    storage, mounts = config.storage, []
    lustre = storage.lustre
    if isinstance(lustre, NewLustre | ExistingLustre):
        size = f" {lustre.capacity_tib} TiB" if isinstance(lustre, NewLustre) else " (existing)"
        (boxes["lustre"].items if "lustre" in boxes else outside).append(("lustre", f"Managed Lustre{size}"))
        mounts.append(("lustre", lustre.mount_point))
    netapp = storage.netapp
    if isinstance(netapp, NewNetApp | ExistingNetApp):
        where = boxes["netapp"].items if "netapp" in boxes else outside
        for v in netapp.volumes:
            where.append((f"netapp_{_key(v.name)}", f"NetApp volume {v.name} ({v.quota_gib} GiB, {v.protocol})"))
            mounts.append((f"netapp_{_key(v.name)}", v.mount_point))
    shared = storage.shared
    mount_point = getattr(shared, "mount_point", None)
    if mount_point is not None:
        outside.append(("shared", f"shared home and /sched ({getattr(shared, 'mode', 'shared')})"))
        mounts.append(("shared", str(mount_point)))
    containers = getattr(storage.blob, "containers", None)
    if containers:
        names = ", ".join(f"{c.name} ({c.purpose})" for c in containers)
        outside.append(("blob", f"Blob containers: {names}"))
        mounts.append(("blob", "private endpoint"))
    if "database" in boxes and getattr(config.compute.accounting, "mode", None) == "new":
        boxes["database"].items.append(("database", "Slurm accounting database (MySQL flexible server)"))
    return mounts


def mermaid(t: Topology) -> str:
    lines = ["flowchart LR", f'  subgraph vnet["{_quote(t.vnet.label)}"]']
    for box in t.subnets:
        lines.append(f'    subgraph {box.key}["{_quote(box.label)}"]')
        lines += [f'      {key}["{_quote(label)}"]' for key, label in box.items] or [f'      {box.key}_empty[" "]']
        lines.append("    end")
    lines.append("  end")
    lines += [f'  {key}["{_quote(label)}"]' for key, label in t.outside]
    lines += [f'  {a} -- "{_quote(label)}" --> {b}' for a, b, label in t.links]
    return "\n".join(lines) + "\n"


def dot(t: Topology) -> str:
    lines = [
        f'digraph "{_quote(t.title)} network" {{',
        "  rankdir=LR;",
        "  compound=true;",
        '  node [shape=box, fontname="Helvetica"];',
        '  subgraph "cluster_vnet" {',
        f'    label="{_quote(t.vnet.label)}";',
        '    "vnet" [shape=point, style=invis];',
    ]
    for box in t.subnets:
        lines += [f'    subgraph "cluster_{box.key}" {{', f'      label="{_quote(box.label)}";']
        lines.append(f'      "{box.key}" [shape=point, style=invis];')
        lines += [f'      "{key}" [label="{_quote(label)}"];' for key, label in box.items]
        lines.append("    }")
    lines.append("  }")
    lines += [f'  "{key}" [label="{_quote(label)}"];' for key, label in t.outside]
    for a, b, label in t.links:
        tail = ', ltail="cluster_vnet"' if a == "vnet" else f', ltail="cluster_{a}"' if a.startswith("snet_") else ""
        lines.append(f'  "{a}" -> "{b}" [label="{_quote(label)}"{tail}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def network_files(config: LandingZoneConfig, plan: DeploymentPlan) -> dict[str, str]:
    t = topology(config, plan)
    return {f"{NETWORK_STEM}.mmd": mermaid(t), f"{NETWORK_STEM}.dot": dot(t)}
