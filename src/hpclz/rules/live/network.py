"""Live network rules: an `existing` VNet as Azure has it, and the hub a peering would use the gateway of."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from hpclz.config.network import SUBNET_ROLES, ExistingVnet, Subnet
from hpclz.findings import Finding, Severity
from hpclz.naming import NameBuilder
from hpclz.render.zone import BASTION_SUBNET, Zone
from hpclz.rules.base import Rule
from hpclz.rules.live.context import LiveContext

# network.vnet.mode: existing -- hpclz creates nothing in a VNet it does not own but NSGs, so every subnet the
# config names must already be there, with its prefix and its delegation (read through azure-mgmt-network).
VNET = ("network", "vnet")


def _subnets(vnet: dict[str, Any]) -> dict[str, dict[str, Any]]:
    listed = (vnet.get("properties") or {}).get("subnets") or []
    return {str(s.get("name", "")).lower(): s.get("properties") or {} for s in listed}


@dataclass(frozen=True)
class ExistingSubnet:
    role: str
    name: str
    config: Subnet
    actual: dict[str, Any] | None  # the subnet's properties as VirtualNetworks - Get returns them; None: absent


def existing_subnets(ctx: LiveContext) -> Iterator[ExistingSubnet]:
    """Each subnet the config declares in an existing VNet that was read, named as render names it."""
    config = ctx.loaded.config.network.vnet
    if not isinstance(config, ExistingVnet) or not ctx.existing_vnet:
        return
    actual = _subnets(ctx.existing_vnet)
    names = NameBuilder(ctx.loaded.config)
    for role in SUBNET_ROLES:
        subnet: Subnet | None = getattr(config.subnets, role, None)
        if subnet is None:
            continue
        name = subnet.name or (BASTION_SUBNET if role == "bastion" else names.subnet(role))
        yield ExistingSubnet(role, name, subnet, actual.get(name.lower()))


# ARM's answers to a spoke peering with useRemoteGateways the hub cannot honour, as users captured them:
# RemoteVnetHasNoGateways (hashicorp/terraform#30569, Azure/bicep#12191, Azure/terraform-azurerm-lz-vending#398);
# the transit one has no code in any capture found (hashicorp/terraform#20298), so only its message is quoted.
NO_GATEWAY = "RemoteVnetHasNoGateways"
NO_TRANSIT = (
    "Peering-to-Gateway cannot have UseRemoteGateways flag set to true, because corresponding remote peering has "
    "AllowGatewayTransit flag set to false."
)


def zone_vnet(ctx: LiveContext) -> tuple[str, str]:
    """The zone's VNet: its name, and the tail of its resource ID a peering's remoteVirtualNetwork.id ends with
    (the whole ID for an existing VNet; from the resource group on for one hpclz creates, whose subscription is
    the deploying one)."""
    vnet = ctx.loaded.config.network.vnet
    if isinstance(vnet, ExistingVnet):
        return vnet.resource_id.rstrip("/").split("/")[-1], vnet.resource_id.rstrip("/").lower()
    zone = Zone(ctx.loaded.config)
    tail = f"/resourcegroups/{zone.rg['network']}/providers/microsoft.network/virtualnetworks/{zone.vnet_name}"
    return zone.vnet_name, tail.lower()


def peerings_to(vnet: dict[str, Any], remote_tail: str) -> list[dict[str, Any]]:
    """A VNet's peerings (VirtualNetworks - Get, properties.virtualNetworkPeerings) to the VNet whose ID ends so."""
    return [
        p
        for p in (vnet.get("properties") or {}).get("virtualNetworkPeerings") or []
        if str(((p.get("properties") or {}).get("remoteVirtualNetwork") or {}).get("id", ""))
        .lower()
        .endswith(remote_tail)
    ]


def hub_has_gateway(hub: dict[str, Any], gateways: list[dict[str, Any]] | None) -> bool:
    """A gateway sits in the hub's GatewaySubnet, whose ipConfigurations then name it; the gateways listed in the
    hub's group (Virtual Network Gateways - List) say the same from the gateway's side."""
    gateway_subnet = _subnets(hub).get("gatewaysubnet") or {}
    if any(
        "/virtualnetworkgateways/" in str(c.get("id", "")).lower() for c in gateway_subnet.get("ipConfigurations") or []
    ):
        return True
    subnet_id = f"{hub.get('id', '')}/subnets/GatewaySubnet".lower()
    for gateway in gateways or []:
        for config in (gateway.get("properties") or {}).get("ipConfigurations") or []:
            if str(((config.get("properties") or {}).get("subnet") or {}).get("id", "")).lower() == subnet_id:
                return True
    return False


class HubHasNoGateway(Rule[LiveContext]):
    """`useRemoteGateways` needs a VPN or ExpressRoute gateway in the hub and `allowGatewayTransit` on the hub's
    side of the peering (learn.microsoft.com/azure/virtual-network/virtual-network-peering-overview, "Gateways and
    on-premises connectivity"; peering shape: azure-rest-api-specs Microsoft.Network 2024-05-01
    examples/VirtualNetworkPeeringGet.json). Without a gateway ARM refuses the spoke's peering PUT with
    RemoteVnetHasNoGateways. The config's hub_gateway flag is only a declaration: this reads the hub."""

    id = "HPCLZ-NET-102"
    severity = Severity.ERROR
    title = "The hub VNet cannot give this zone gateway transit"
    fix = (
        "Deploy the hub's VPN/ExpressRoute gateway and set allowGatewayTransit on the hub's peering to this VNet "
        "first, or set network.hub_peering.use_remote_gateways: false."
    )

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        peering = ctx.loaded.config.network.hub_peering
        if peering is None or not peering.use_remote_gateways or ctx.hub_vnet is None:
            return
        where = ("network", "hub_peering", "use_remote_gateways")
        if not ctx.hub_vnet:
            yield self.finding(ctx, where, f"the hub VNet {peering.remote_vnet_id} does not exist")
            return
        if not hub_has_gateway(ctx.hub_vnet, ctx.hub_gateways):
            yield self.finding(
                ctx, where, f"the hub VNet's GatewaySubnet holds no virtual network gateway (ARM: {NO_GATEWAY})"
            )
        name, tail = zone_vnet(ctx)
        back = peerings_to(ctx.hub_vnet, tail)
        if not back:
            yield self.finding(
                ctx,
                where,
                f"the hub VNet has no peering to {name} yet: this side stays Initiated, with no traffic and no "
                "gateway routes, until the hub's side exists with allowGatewayTransit",
                severity=Severity.WARNING,
            )
        for hub_side in back:
            if not (hub_side.get("properties") or {}).get("allowGatewayTransit"):
                yield self.finding(
                    ctx,
                    where,
                    f"the hub's peering {hub_side.get('name')} to {name} has allowGatewayTransit false (ARM: {NO_TRANSIT})",
                )


class SpokePeeringNotConnected(Rule[LiveContext]):
    """hpclz peers a VNet it creates; an existing VNet must already be peered to the hub (hpclz never writes to a
    VNet it does not own), in state Connected: Initiated means the hub's side is missing and no traffic flows
    (peeringState: azure-rest-api-specs Microsoft.Network 2024-05-01 examples/VirtualNetworkPeeringGet.json;
    learn.microsoft.com/azure/virtual-network/virtual-network-manage-peering)."""

    id = "HPCLZ-NET-105"
    severity = Severity.ERROR
    title = "The existing VNet is not peered to the hub as the config declares"
    fix = (
        "Peer the existing VNet with network.hub_peering.remote_vnet_id on both sides (useRemoteGateways as declared)."
    )

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        hub = ctx.loaded.config.network.hub_peering
        if hub is None or not isinstance(ctx.loaded.config.network.vnet, ExistingVnet) or not ctx.existing_vnet:
            return
        where = ("network", "hub_peering", "remote_vnet_id")
        found = [
            p
            for p in (ctx.existing_vnet.get("properties") or {}).get("virtualNetworkPeerings") or []
            if str(((p.get("properties") or {}).get("remoteVirtualNetwork") or {}).get("id", "")).lower()
            == hub.remote_vnet_id.lower()
        ]
        if not found:
            yield self.finding(ctx, where, f"the VNet has no peering to {hub.remote_vnet_id}")
            return
        props = found[0].get("properties") or {}
        if props.get("peeringState") != "Connected":
            yield self.finding(
                ctx, where, f"peering {found[0].get('name')} is {props.get('peeringState')}, not Connected"
            )
        if hub.use_remote_gateways and not props.get("useRemoteGateways"):
            yield self.finding(
                ctx,
                ("network", "hub_peering", "use_remote_gateways"),
                f"peering {found[0].get('name')} does not use the hub's gateways, as the config declares",
            )


class ExistingVnetMatches(Rule[LiveContext]):
    """An `existing` VNet is read before anything is deployed: a missing subnet, another prefix or a missing
    delegation would otherwise fail mid-deployment (InvalidResourceReference, SubnetMissingRequiredDelegation)
    or, worse, deploy NSG rules for addresses the subnet does not have."""

    id = "HPCLZ-NET-101"
    severity = Severity.ERROR
    title = "The existing VNet does not match what the config declares"
    fix = "Correct network.vnet (resource_id, address_space, subnets) to what Azure has, or change the VNet."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        vnet_config = ctx.loaded.config.network.vnet
        if not isinstance(vnet_config, ExistingVnet) or ctx.existing_vnet is None:
            return
        if not ctx.existing_vnet:
            yield self.finding(ctx, (*VNET, "resource_id"), f"{vnet_config.resource_id} does not exist")
            return
        yield from self._address_space(ctx, vnet_config)
        yield from self._subnets(ctx)

    def _address_space(self, ctx: LiveContext, config: ExistingVnet) -> Iterator[Finding]:
        actual = ((ctx.existing_vnet or {}).get("properties") or {}).get("addressSpace") or {}
        prefixes = set(actual.get("addressPrefixes") or [])
        for index, space in enumerate(config.address_space):
            if str(space) not in prefixes:
                yield self.finding(
                    ctx,
                    (*VNET, "address_space", index),
                    f"{space} is not an address prefix of the VNet (it has {', '.join(sorted(prefixes)) or 'none'})",
                )

    def _subnets(self, ctx: LiveContext) -> Iterator[Finding]:
        for subnet in existing_subnets(ctx):
            where = (*VNET, "subnets", subnet.role)
            found = subnet.actual
            if found is None:
                yield self.finding(ctx, (*where, "name"), f"subnet {subnet.name} is not in the VNet")
                continue
            if found.get("addressPrefix") != str(subnet.config.cidr):
                yield self.finding(
                    ctx,
                    (*where, "cidr"),
                    f"subnet {subnet.name} is {found.get('addressPrefix')}, not {subnet.config.cidr}",
                )
            yield from self._delegation(ctx, subnet, found)

    def _delegation(self, ctx: LiveContext, subnet: ExistingSubnet, found: dict[str, Any]) -> Iterator[Finding]:
        """The declared delegation must be there; an undeclared one is as bad: a delegated subnet holds only the
        service it is delegated to (learn.microsoft.com/azure/virtual-network/subnet-delegation-overview), so
        Lustre, VMs or endpoints hpclz puts there would fail to deploy."""
        services = sorted({str((d.get("properties") or {}).get("serviceName")) for d in found.get("delegations") or []})
        where = (*VNET, "subnets", subnet.role, "delegation")
        wanted = subnet.config.delegation
        if wanted and wanted not in services:
            yield self.finding(ctx, where, f"subnet {subnet.name} is not delegated to {wanted}")
        elif not wanted and services:
            yield self.finding(
                ctx,
                where,
                f"subnet {subnet.name} is delegated to {', '.join(services)}, so the {subnet.role} resources hpclz "
                "places there cannot use it",
            )
