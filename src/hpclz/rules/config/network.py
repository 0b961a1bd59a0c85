"""Network rules: address plan, subnet sizing, Bastion, delegations, exposure to the Internet."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from ipaddress import IPv4Network, ip_network

from hpclz.config.network import NsgRule
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext
from hpclz.rules.exposure import REMOTE_LOGIN_PORTS, covers, is_internet

SUBNETS = ("network", "vnet", "subnets")


def _reserved(ctx: ConfigContext) -> int:
    return int(ctx.catalog.service("network", "reserved_addresses_per_subnet"))


def _usable(cidr: IPv4Network, ctx: ConfigContext) -> int:
    return cidr.num_addresses - _reserved(ctx)


class SubnetInsideVnet(Rule[ConfigContext]):
    """A subnet must lie inside one of the VNet's address ranges, or Azure rejects the deployment."""

    id = "HPCLZ-NET-001"
    severity = Severity.ERROR
    title = "Subnet lies outside the VNet address space"
    fix = "Pick a subnet CIDR inside network.vnet.address_space, or widen the address space."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        space = ctx.config.network.vnet.address_space
        shown = ", ".join(str(s) for s in space)
        for role, subnet in ctx.subnets():
            if not any(subnet.cidr.subnet_of(net) for net in space):
                yield self.finding(
                    ctx, (*SUBNETS, role, "cidr"), f"subnet {role} ({subnet.cidr}) is outside the VNet's {shown}"
                )


class SubnetsDoNotOverlap(Rule[ConfigContext]):
    """Two subnets of one VNet can never share addresses; Azure refuses overlapping prefixes."""

    id = "HPCLZ-NET-002"
    severity = Severity.ERROR
    title = "Two subnets overlap"
    fix = "Give each subnet its own, non-overlapping CIDR."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        seen: list[tuple[str, IPv4Network]] = []
        for role, subnet in ctx.subnets():
            for other, cidr in seen:
                if subnet.cidr.overlaps(cidr):
                    yield self.finding(
                        ctx,
                        (*SUBNETS, role, "cidr"),
                        f"subnet {role} ({subnet.cidr}) overlaps subnet {other} ({cidr})",
                    )
            seen.append((role, subnet.cidr))


class VnetDoesNotOverlapHub(Rule[ConfigContext]):
    """Peering fails when the spoke's address space overlaps the hub's (CAF hub-spoke topology)."""

    id = "HPCLZ-NET-003"
    severity = Severity.ERROR
    title = "VNet address space overlaps the peered hub"
    fix = "Choose a VNet address space that does not overlap network.hub_peering.remote_address_space."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        hub = ctx.config.network.hub_peering
        if hub is None:
            return
        for i, net in enumerate(ctx.config.network.vnet.address_space):
            for remote in hub.remote_address_space:
                if net.overlaps(remote):
                    yield self.finding(
                        ctx,
                        ("network", "vnet", "address_space", i),
                        f"VNet range {net} overlaps the hub range {remote}; the peering cannot be created",
                    )


class SubnetHasRoomForNodes(Rule[ConfigContext]):
    """Every node needs an address. Azure keeps 5 addresses of each subnet; the compute subnet must hold every
    partition at max_nodes, the admin subnet the scheduler, login nodes and CycleCloud server."""

    id = "HPCLZ-NET-004"
    severity = Severity.ERROR
    title = "Subnet too small for its nodes"
    fix = "Widen the subnet (a smaller prefix length) or lower max_nodes / login count."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        compute = ctx.config.compute
        subnets = ctx.config.network.vnet.subnets
        need_compute = sum(p.max_nodes for p in compute.partitions)
        need_admin = sum(count for _, _, count in compute.service_vms())
        for role, need, what in (
            ("compute", need_compute, "the partitions' max_nodes"),
            ("admin", need_admin, "scheduler, CycleCloud server and login nodes"),
        ):
            cidr = getattr(subnets, role).cidr
            usable = _usable(cidr, ctx)
            if usable < need:
                yield self.finding(
                    ctx,
                    (*SUBNETS, role, "cidr"),
                    f"subnet {role} ({cidr}) has {usable} usable addresses "
                    f"({cidr.num_addresses} minus {_reserved(ctx)} Azure reserves) but {what} need {need}",
                )


class BastionSubnet(Rule[ConfigContext]):
    """Azure Bastion deploys only into a subnet named exactly AzureBastionSubnet, /26 or larger.
    Source: learn.microsoft.com/azure/bastion/configuration-settings#subnet"""

    id = "HPCLZ-NET-005"
    severity = Severity.ERROR
    title = "Bastion needs a subnet named AzureBastionSubnet of /26 or larger"
    fix = "Add network.vnet.subnets.bastion with name: AzureBastionSubnet and a /26 (or larger) CIDR."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        subnet = ctx.config.network.vnet.subnets.bastion
        name = ctx.catalog.service("network", "bastion_subnet_name")
        max_prefix = ctx.catalog.service("network", "bastion_max_prefix")
        if not ctx.config.network.bastion.enabled:
            return
        if subnet is None:
            yield self.finding(
                ctx, ("network", "bastion", "enabled"), "Bastion is enabled but the VNet has no bastion subnet"
            )
            return
        if subnet.name != name:
            yield self.finding(
                ctx, (*SUBNETS, "bastion", "name"), f"the bastion subnet is named {subnet.name!r}; it must be {name!r}"
            )
        if subnet.cidr.prefixlen > max_prefix:
            yield self.finding(
                ctx, (*SUBNETS, "bastion", "cidr"), f"the bastion subnet is /{subnet.cidr.prefixlen}; Bastion needs /26"
            )


class LustreSubnetSize(Rule[ConfigContext]):
    """Azure Managed Lustre takes addresses in proportion to its capacity; the prerequisites page gives the
    smallest subnet per capacity band (e.g. /24 from 96 TiB).
    Source: learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites#network-size-requirements"""

    id = "HPCLZ-NET-006"
    # An error, not a warning: the file system cannot be created in a subnet without the addresses it needs,
    # and a subnet cannot be resized while Lustre sits in it, so deploying would fail or strand the design.
    severity = Severity.ERROR
    title = "Lustre subnet smaller than Azure requires for the file system"
    fix = "Widen network.vnet.subnets.lustre to the recommended prefix for storage.lustre.capacity_tib."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        lustre = ctx.config.storage.lustre
        subnet = ctx.config.network.vnet.subnets.lustre
        if lustre.mode != "new" or subnet is None:
            return
        bands = ctx.catalog.service("lustre", "subnet_prefix_by_capacity")
        band = next((b for b in bands if lustre.capacity_tib <= b["up_to_tib"]), bands[-1])
        if subnet.cidr.prefixlen > band["max_prefix"]:
            yield self.finding(
                ctx,
                (*SUBNETS, "lustre", "cidr"),
                f"the Lustre subnet is /{subnet.cidr.prefixlen} but {lustre.capacity_tib} TiB needs "
                f"/{band['max_prefix']} or larger",
            )


class NetAppSubnetDelegated(Rule[ConfigContext]):
    """Azure NetApp Files volumes live only in a subnet delegated to Microsoft.NetApp/volumes, and a delegated
    subnet cannot host VMs, Lustre or endpoints: the delegation belongs to the netapp subnet alone."""

    id = "HPCLZ-NET-007"
    severity = Severity.ERROR
    title = "NetApp delegation missing or on the wrong subnet"
    fix = "Set delegation: Microsoft.NetApp/volumes on the netapp subnet only."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        delegation = ctx.catalog.service("netapp", "delegation")
        for role, subnet in ctx.subnets():
            if role == "netapp" and subnet.delegation != delegation:
                yield self.finding(
                    ctx,
                    (*SUBNETS, role),
                    f"the netapp subnet is delegated to {subnet.delegation or 'nothing'}; it must be {delegation}",
                )
            elif role != "netapp" and subnet.delegation == delegation:
                yield self.finding(
                    ctx,
                    (*SUBNETS, role, "delegation"),
                    f"subnet {role} is delegated to {delegation}, so nothing else can be placed in it",
                    fix=f"Remove the delegation from subnet {role}; NetApp gets its own netapp subnet.",
                )


def _from_internet(rule: NsgRule) -> bool:
    return rule.direction == "Inbound" and rule.access == "Allow" and is_internet(rule.source_address_prefix)


def _remote_login_ports(rule: NsgRule) -> list[tuple[int, str]]:
    if not _from_internet(rule) or rule.protocol == "Icmp":
        return []
    return [(port, name) for port, name in REMOTE_LOGIN_PORTS.items() if covers(rule.destination_port_range, port)]


class NoInternetRemoteLogin(Rule[ConfigContext]):
    """SSH and RDP open to the Internet are the most scanned ports on Azure. `*`, `Any`, `Internet`, `0.0.0.0/0`
    and `0.0.0.0` all mean the whole Internet in an NSG rule (checkov only catches some spellings)."""

    id = "HPCLZ-NET-008"
    severity = Severity.ERROR
    title = "NSG rule lets the Internet reach SSH or RDP"
    fix = "Restrict source_address_prefix to a private range or the hub, and reach nodes through Bastion."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, rule in enumerate(ctx.config.network.nsg_rules):
            for port, name in _remote_login_ports(rule):
                yield self.finding(
                    ctx,
                    ("network", "nsg_rules", i, "source_address_prefix"),
                    f"NSG rule {rule.name} allows {name} (port {port}) from "
                    f"{rule.source_address_prefix!r}, i.e. from the whole Internet",
                )


class NoInternetInboundToNodes(Rule[ConfigContext]):
    """Scheduler, login and compute nodes get no public IP; an Internet-sourced allow rule on their subnets
    undoes that the moment anything gets a public address or a load balancer."""

    id = "HPCLZ-NET-009"
    severity = Severity.WARNING
    title = "NSG rule allows inbound Internet traffic to admin or compute nodes"
    fix = "Remove the rule or restrict its source to a private range; publish services through the hub instead."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, rule in enumerate(ctx.config.network.nsg_rules):
            # SSH/RDP exposure is NET-008's error; this rule covers every other port.
            if rule.subnet in ("admin", "compute") and _from_internet(rule) and not _remote_login_ports(rule):
                yield self.finding(
                    ctx,
                    ("network", "nsg_rules", i),
                    f"NSG rule {rule.name} allows inbound traffic from {rule.source_address_prefix!r} "
                    f"(the Internet) to the {rule.subnet} subnet on ports {rule.destination_port_range}",
                )


class NsgPriorityFree(Rule[ConfigContext]):
    """Two security rules of one NSG may not share a priority and a direction: ARM refuses the NSG ("Rules cannot have
    the same Priority and Direction", SecurityRuleConflict; learn.microsoft.com/azure/virtual-network/network-security-
    groups-overview: priorities 100-4096, processed in order). hpclz renders its own inbound rules beside the config's:
    DenyInternetInbound at 4096 on every subnet's NSG, and, when storage.shared is an Azure Files NFS share,
    AllowNfsFromCluster (4000) and DenyNfsFromElsewhere (4010) on the private-endpoints subnet's."""

    id = "HPCLZ-NET-013"
    severity = Severity.ERROR
    title = "NSG rule priority already taken on its subnet"
    fix = "Give the rule a priority no other rule of that subnet and direction uses (hpclz's own: 4000, 4010, 4096)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        from hpclz.config.storage import AzureFilesShared
        from hpclz.render.nsg import DENY_INTERNET_PRIORITY, NFS_ALLOW_PRIORITY, NFS_DENY_PRIORITY

        config = ctx.config
        taken: dict[tuple[str, str, int], str] = {}
        for subnet in ("admin", "compute", "lustre", "netapp", "private_endpoints", "database"):
            taken[(subnet, "Inbound", DENY_INTERNET_PRIORITY)] = "hpclz's DenyInternetInbound"
        if isinstance(config.storage.shared, AzureFilesShared):
            taken[("private_endpoints", "Inbound", NFS_ALLOW_PRIORITY)] = "hpclz's AllowNfsFromCluster"
            taken[("private_endpoints", "Inbound", NFS_DENY_PRIORITY)] = "hpclz's DenyNfsFromElsewhere"
        for i, rule in enumerate(config.network.nsg_rules):
            key = (rule.subnet, rule.direction, rule.priority)
            if key in taken:
                yield self.finding(
                    ctx,
                    ("network", "nsg_rules", i, "priority"),
                    f"NSG rule {rule.name}: {rule.direction.lower()} priority {rule.priority} on the {rule.subnet} "
                    f"subnet is already {taken[key]}",
                )
            else:
                taken[key] = f"rule {rule.name}'s"


class PrivateWayIn(Rule[ConfigContext]):
    """Nodes have no public IPs, so operators arrive through Bastion or over a peered hub (VPN/ExpressRoute).
    Without either, nobody can log in to the cluster."""

    id = "HPCLZ-NET-010"
    severity = Severity.WARNING
    title = "No private way in: Bastion disabled and no hub peering"
    fix = "Enable network.bastion (with an AzureBastionSubnet) or add network.hub_peering."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        network = ctx.config.network
        if not network.bastion.enabled and network.hub_peering is None:
            yield self.finding(
                ctx, ("network", "bastion", "enabled"), "Bastion is disabled and there is no hub peering"
            )


class OutboundPath(Rule[ConfigContext]):
    """Azure retired default outbound access for new subnets (September 2025): nodes without a NAT gateway
    or a route to a hub firewall cannot reach package mirrors, container registries or licence servers. A hub
    peering alone is not a path: without a user-defined default route, traffic never reaches the hub's firewall."""

    id = "HPCLZ-NET-011"
    severity = Severity.WARNING
    title = "No outbound path: NAT gateway disabled and no route to a hub firewall"
    fix = "Enable network.nat_gateway, or set network.hub_peering.firewall_private_ip to route egress to the hub."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        network = ctx.config.network
        hub = network.hub_peering
        if network.nat_gateway.enabled:
            return
        if hub is None:
            yield self.finding(
                ctx, ("network", "nat_gateway", "enabled"), "the NAT gateway is disabled and there is no hub peering"
            )
        elif hub.firewall_private_ip is None:
            yield self.finding(
                ctx,
                ("network", "hub_peering"),
                "the NAT gateway is disabled and the hub peering names no firewall_private_ip to route 0.0.0.0/0 to",
            )
        elif not any(hub.firewall_private_ip in space for space in hub.remote_address_space):
            yield self.finding(
                ctx,
                ("network", "hub_peering", "firewall_private_ip"),
                f"{hub.firewall_private_ip} is outside the hub's remote_address_space: egress would have no next hop",
            )


class HubMustAllowEgress(Rule[ConfigContext]):
    """Without a NAT gateway, 0.0.0.0/0 from the zone's subnets goes to the hub's Azure Firewall, which denies what
    its rules do not allow (learn.microsoft.com/azure/firewall/rule-processing: "By default, Azure Firewall denies
    all traffic until you manually configure rules to allow traffic"). The CycleCloud server needs Azure Resource Manager, Entra ID,
    telemetry and GitHub for the cyclecloud-slurm release (learn.microsoft.com/azure/cyclecloud/how-to/
    running-in-locked-down-network, MicrosoftDocs/azure-docs@0aa710a l.15-23, l.88-97), the nodes their package
    repositories: a hub that allows none of it leaves the CycleCloud server and every node hanging at boot.
    `hpclz render` writes the full list derived from the rendered artefacts (egress.md, egress.json:
    hpclz.render.egress); this finding names what the CycleCloud server needs in every zone."""

    id = "HPCLZ-NET-014"
    severity = Severity.INFO
    title = "Egress leaves through the hub firewall: the hub must allow what the zone fetches"
    fix = (
        "Give the hub team what `hpclz render` writes: egress.md (application rules for the host names, network "
        "rules for the service tags) and egress-hub.template.json (the same as a Firewall Policy rule collection "
        "group they deploy), or enable network.nat_gateway."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        from hpclz.render.egress import CYCLECLOUD, DESTINATIONS, GITHUB_RELEASE

        network = ctx.config.network
        hub = network.hub_peering
        if network.nat_gateway.enabled or hub is None or hub.firewall_private_ip is None:
            return
        # What every CycleCloud server fetches whatever the config: its own needs and the cyclecloud-slurm release.
        # Private endpoints may serve Storage and Key Vault; VM extensions depend on the config (egress.md has them).
        every_zone = (None, "cyclecloud initialize", GITHUB_RELEASE)
        always = sorted(
            {
                d.host
                for d in DESTINATIONS
                if d.role == CYCLECLOUD and d.private_dns_zone is None and d.trigger in every_zone
            }
        )
        yield self.finding(
            ctx,
            ("network", "hub_peering", "firewall_private_ip"),
            f"0.0.0.0/0 goes to the hub firewall {hub.firewall_private_ip}; it must allow at least the CycleCloud "
            f"server's {', '.join(always)} and the nodes' package repositories: `hpclz render` writes the full list "
            "to egress.md",
        )


class RemoteGatewaysNeedHubGateway(Rule[ConfigContext]):
    """`useRemoteGateways` on the spoke side fails unless the hub VNet has a VPN or ExpressRoute gateway and its
    side of the peering allows gateway transit (learn.microsoft.com/azure/virtual-network/
    virtual-network-peering-overview, "Gateways and on-premises connectivity")."""

    id = "HPCLZ-NET-012"
    severity = Severity.ERROR
    title = "Spoke peering uses the hub's gateway, but no hub gateway is declared"
    fix = "Set network.hub_peering.hub_gateway: true once the hub has a gateway with gateway transit, or drop "
    "use_remote_gateways."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        peering = ctx.config.network.hub_peering
        if peering is not None and peering.use_remote_gateways and not peering.hub_gateway:
            yield self.finding(
                ctx,
                ("network", "hub_peering", "use_remote_gateways"),
                "use_remote_gateways: true needs a VPN or ExpressRoute gateway on the hub (hub_gateway is false)",
            )


# Azure's default system routes whose next hop is None: "Traffic routed to the None next hop type is dropped, rather
# than routed outside the subnet", for RFC 1918's 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 and RFC 6598's
# 100.64.0.0/10 (learn.microsoft.com/azure/virtual-network/virtual-networks-udr-overview, "System routes", "Default").
DROPPED_PRIVATE = tuple(IPv4Network(p) for p in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))


def _private_prefix(text: str) -> IPv4Network | None:
    """An NSG destination that is an IPv4 prefix inside one of the dropped private ranges (not a service tag)."""
    try:
        prefix = ip_network(text, strict=False)
    except ValueError:
        return None
    if isinstance(prefix, IPv4Network) and any(prefix.subnet_of(d) for d in DROPPED_PRIVATE):
        return prefix
    return None


def _uncovered(prefix: IPv4Network, ranges: Sequence[IPv4Network]) -> list[IPv4Network]:
    """The parts of `prefix` that none of `ranges` holds."""
    rest = [prefix]
    for covered in ranges:
        left: list[IPv4Network] = []
        for part in rest:
            if part.subnet_of(covered):
                continue
            left.extend(part.address_exclude(covered) if covered.subnet_of(part) else [part])
        rest = left
    return rest


class PrivateDestinationRouted(Rule[ConfigContext]):
    """An outbound allow rule to a private range (a licence server in the hub, say) only works if a route takes the
    traffic there. Azure routes a subnet's traffic by its route table: the VNet's own address space, "a route ... for
    each address range within the address space of each virtual network a peering is created for", and the prefixes
    a virtual network gateway learns ("Optional default routes"); everything else in 10.0.0.0/8, 172.16.0.0/12,
    192.168.0.0/16 and 100.64.0.0/10 meets a default route whose next hop is None, and "Traffic routed to the None
    next hop type is dropped" (learn.microsoft.com/azure/virtual-network/virtual-networks-udr-overview, "System
    routes"). So a rule naming such a range outside the VNet, with no hub peering that holds it, is a rule for
    traffic that never leaves. Where the zone uses the hub's gateway (use_remote_gateways: the prefixes it learns
    from on-premises are not in the config) or sends 0.0.0.0/0 to the hub firewall (firewall_private_ip: the hub
    forwards), hpclz cannot tell and stays quiet."""

    id = "HPCLZ-NET-015"
    severity = Severity.WARNING
    title = "Outbound NSG rule allows a private range no route reaches"
    fix = (
        "Peer the VNet that holds the range (network.hub_peering with the range in remote_address_space), use the "
        "hub's gateway (use_remote_gateways) or route egress to the hub firewall (firewall_private_ip); or correct "
        "destination_address_prefix."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        network = ctx.config.network
        hub = network.hub_peering
        if hub is not None and (hub.use_remote_gateways or hub.firewall_private_ip is not None):
            return
        routed = [*network.vnet.address_space, *(hub.remote_address_space if hub else [])]
        for i, rule in enumerate(network.nsg_rules):
            prefix = _private_prefix(rule.destination_address_prefix)
            if rule.direction != "Outbound" or rule.access != "Allow" or prefix is None:
                continue
            missing = _uncovered(prefix, routed)
            if missing:
                where = "the peered hub" if hub else "a hub (network.hub_peering is not set)"
                yield self.finding(
                    ctx,
                    ("network", "nsg_rules", i, "destination_address_prefix"),
                    f"NSG rule {rule.name} allows outbound traffic to {prefix}, but "
                    f"{', '.join(str(m) for m in missing)} is neither in the VNet nor in {where}, and there is no "
                    "gateway or firewall route: Azure drops it (a system route with next hop None)",
                )


NETWORK_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    SubnetInsideVnet,
    SubnetsDoNotOverlap,
    VnetDoesNotOverlapHub,
    SubnetHasRoomForNodes,
    BastionSubnet,
    LustreSubnetSize,
    NetAppSubnetDelegated,
    NoInternetRemoteLogin,
    NoInternetInboundToNodes,
    NsgPriorityFree,
    PrivateWayIn,
    OutboundPath,
    HubMustAllowEgress,
    RemoteGatewaysNeedHubGateway,
    PrivateDestinationRouted,
)
