"""Security rules per subnet: Internet inbound denied explicitly, plus the config's extra rules.

The Bastion subnet gets exactly the rules Azure requires of an NSG on AzureBastionSubnet
(learn.microsoft.com/azure/bastion/bastion-nsg): without them Bastion stops working or cannot be updated.
"""

from __future__ import annotations

from typing import Any

from hpclz.config.network import NsgRule
from hpclz.render.zone import SubnetView

DENY_INTERNET_PRIORITY = 4096
# NFS to the Azure Files share of storage.shared (/sched, where cyclecloud-slurm keeps munge.key, and home): its
# private endpoint sits in the private-endpoints subnet, whose NSG applies to it (privateEndpointNetworkPolicies
# Enabled, learn.microsoft.com/azure/private-link/disable-private-endpoint-network-policy). NFS Azure file shares
# use TCP 2049 only (learn.microsoft.com/azure/storage/files/files-nfs-protocol, "Security and networking").
NFS_PORT = "2049"
NFS_ALLOW_PRIORITY = 4000
NFS_DENY_PRIORITY = 4010
# Where srun (and salloc) listen for the cluster's calls back: "The srun creates a set of listening ports to
# communicate with the controller, the slurmstepd and to handle the application I/O. By default these ports are
# ephemeral" (slurm.conf(5), SrunPortRange, Slurm 22.05), and "This is necessary for login nodes that are behind a
# firewall" (slurm.schedmd.com/network.html, Communication for slurmd). cyclecloud-slurm 4.0.9's slurm.conf sets no
# range (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/templates/slurm.conf.template), so hpclz pins the man
# page's own example, 3000 ports above the slurmctld/slurmd ports it must stay clear of (6817, 6818): "A single srun
# opens 3 listening ports plus 2 more for every 48 hosts".
SRUN_PORTS = (60001, 63000)
SRUN_PORT_RANGE = f"{SRUN_PORTS[0]}-{SRUN_PORTS[1]}"
# slurmctld's and slurmd's own ports, as cyclecloud-slurm leaves them (its template sets neither SlurmctldPort nor
# SlurmdPort): "The default port used by slurmctld to listen for incoming requests is 6817", slurmd's 6818
# (slurm.schedmd.com/network.html).
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818


def _rule(
    name: str,
    priority: int,
    direction: str,
    access: str,
    protocol: str,
    source: str,
    destination: str,
    ports: list[str],
    description: str,
) -> dict[str, Any]:
    props: dict[str, Any] = {
        "priority": priority,
        "direction": direction,
        "access": access,
        "protocol": protocol,
        "sourceAddressPrefix": source,
        "sourcePortRange": "*",
        "destinationAddressPrefix": destination,
        "description": description,
    }
    if len(ports) == 1:
        props["destinationPortRange"] = ports[0]
    else:
        props["destinationPortRanges"] = ports
    return {"name": name, "properties": props}


BASTION_RULES: list[dict[str, Any]] = [
    _rule("AllowHttpsInbound", 120, "Inbound", "Allow", "Tcp", "Internet", "*", ["443"], "Bastion: users reach the portal session"),
    _rule("AllowGatewayManagerInbound", 130, "Inbound", "Allow", "Tcp", "GatewayManager", "*", ["443"], "Bastion: control plane"),
    _rule("AllowAzureLoadBalancerInbound", 140, "Inbound", "Allow", "Tcp", "AzureLoadBalancer", "*", ["443"], "Bastion: health probes"),
    _rule("AllowBastionHostCommunication", 150, "Inbound", "Allow", "*", "VirtualNetwork", "VirtualNetwork", ["8080", "5701"], "Bastion: data plane between instances"),
    _rule("DenyAllInbound", DENY_INTERNET_PRIORITY, "Inbound", "Deny", "*", "*", "*", ["*"], "hpclz: nothing else reaches Bastion"),
    _rule("AllowSshRdpOutbound", 100, "Outbound", "Allow", "*", "*", "VirtualNetwork", ["22", "3389"], "Bastion: sessions to VMs"),
    _rule("AllowAzureCloudOutbound", 110, "Outbound", "Allow", "Tcp", "*", "AzureCloud", ["443"], "Bastion: diagnostics and metering"),
    _rule("AllowBastionCommunication", 120, "Outbound", "Allow", "*", "VirtualNetwork", "VirtualNetwork", ["8080", "5701"], "Bastion: data plane between instances"),
    _rule("AllowHttpOutbound", 130, "Outbound", "Allow", "*", "*", "Internet", ["80"], "Bastion: session and certificate validation"),
]  # fmt: skip


def _extra(rule: NsgRule) -> dict[str, Any]:
    out = _rule(
        rule.name,
        rule.priority,
        rule.direction,
        rule.access,
        rule.protocol,
        rule.source_address_prefix,
        rule.destination_address_prefix,
        [rule.destination_port_range],
        f"hpclz: network.nsg_rules[{rule.name}]",
    )
    out["properties"]["sourcePortRange"] = rule.source_port_range
    return out


def nfs_rules(cluster_cidrs: list[str]) -> list[dict[str, Any]]:
    """NFS to the shared file share only from the cluster's own subnets. The NSG's default AllowVnetInBound lets in
    the whole VirtualNetwork tag, which covers peered VNets and on-premises ranges behind a gateway
    (learn.microsoft.com/azure/virtual-network/service-tags-overview, VirtualNetwork): without these rules the hub
    and on-premises reach /sched, whose share squashes no root (cyclecloud-slurm writes munge.key there as root and
    chowns it: Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py l.328-354), as root (HPCLZ-TPL-055)."""
    allow = _rule(
        "AllowNfsFromCluster",
        NFS_ALLOW_PRIORITY,
        "Inbound",
        "Allow",
        "Tcp",
        "*",
        "*",
        [NFS_PORT],
        "hpclz: storage.shared NFS from the cluster's subnets only",
    )
    del allow["properties"]["sourceAddressPrefix"]
    allow["properties"]["sourceAddressPrefixes"] = cluster_cidrs
    deny = _rule(
        "DenyNfsFromElsewhere",
        NFS_DENY_PRIORITY,
        "Inbound",
        "Deny",
        "*",
        "*",
        "*",
        [NFS_PORT],
        "hpclz: no NFS to /sched and home from the hub, peered VNets or on-premises",
    )
    return [allow, deny]


def security_rules(
    view: SubnetView, extra: list[NsgRule], cluster_cidrs: list[str] | None = None
) -> list[dict[str, Any]]:
    """`cluster_cidrs`: the cluster's subnets, when the private-endpoints subnet fronts an NFS share (storage.shared)."""
    if view.role == "bastion":
        return BASTION_RULES
    rules = [_extra(r) for r in extra if r.subnet == view.role]
    if view.role == "private_endpoints" and cluster_cidrs:
        rules += nfs_rules(cluster_cidrs)
    rules.append(
        _rule(
            "DenyInternetInbound",
            DENY_INTERNET_PRIORITY,
            "Inbound",
            "Deny",
            "*",
            "Internet",
            "*",
            ["*"],
            "hpclz: no inbound traffic from the Internet; operators arrive through Bastion or the hub",
        )
    )
    return sorted(rules, key=lambda r: (r["properties"]["direction"], r["properties"]["priority"]))
