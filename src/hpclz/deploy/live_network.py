"""Live network rules: an `existing` VNet as Azure has it, and the hub a peering would use the gateway of."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from hpclz.config.network import SUBNET_ROLES, ExistingVnet
from hpclz.deploy.live_context import LiveContext
from hpclz.findings import Finding, Severity
from hpclz.naming import NameBuilder
from hpclz.rules.base import Rule

# network.vnet.mode: existing -- hpclz creates nothing in a VNet it does not own but NSGs, so every subnet the
# config names must already be there, with its prefix and its delegation (read through azure-mgmt-network).
VNET = ("network", "vnet")


def _subnets(vnet: dict[str, Any]) -> dict[str, dict[str, Any]]:
    listed = (vnet.get("properties") or {}).get("subnets") or []
    return {str(s.get("name", "")).lower(): s.get("properties") or {} for s in listed}


class HubHasNoGateway(Rule[LiveContext]):
    """`useRemoteGateways` needs a VPN or ExpressRoute gateway in the hub: a virtual network gateway sits in the
    hub's GatewaySubnet, whose ipConfigurations then name it (learn.microsoft.com/azure/virtual-network/
    virtual-network-peering-overview; subnet shape: azure-rest-api-specs Microsoft.Network VirtualNetworkGet
    examples). The config's hub_gateway flag is only a declaration: this reads the hub."""

    id = "HPCLZ-NET-102"
    severity = Severity.ERROR
    title = "The hub VNet has no gateway for use_remote_gateways"
    fix = "Deploy the hub's VPN/ExpressRoute gateway first, or set network.hub_peering.use_remote_gateways: false."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        peering = ctx.loaded.config.network.hub_peering
        if peering is None or not peering.use_remote_gateways or ctx.hub_vnet is None:
            return
        where = ("network", "hub_peering", "use_remote_gateways")
        if not ctx.hub_vnet:
            yield self.finding(ctx, where, f"the hub VNet {peering.remote_vnet_id} does not exist")
            return
        gateway = _subnets(ctx.hub_vnet).get("gatewaysubnet")
        configs = (gateway or {}).get("ipConfigurations") or []
        if not any("/virtualnetworkgateways/" in str(c.get("id", "")).lower() for c in configs):
            yield self.finding(ctx, where, "the hub VNet's GatewaySubnet holds no virtual network gateway")


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
        yield from self._subnets(ctx, vnet_config)

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

    def _subnets(self, ctx: LiveContext, config: ExistingVnet) -> Iterator[Finding]:
        actual = _subnets(ctx.existing_vnet or {})
        names = NameBuilder(ctx.loaded.config)
        for role in SUBNET_ROLES:
            subnet = getattr(config.subnets, role)
            if subnet is None:
                continue
            name = subnet.name or names.subnet(role)
            where = (*VNET, "subnets", role)
            found = actual.get(name.lower())
            if found is None:
                yield self.finding(ctx, (*where, "name"), f"subnet {name} is not in the VNet")
                continue
            if found.get("addressPrefix") != str(subnet.cidr):
                yield self.finding(
                    ctx, (*where, "cidr"), f"subnet {name} is {found.get('addressPrefix')}, not {subnet.cidr}"
                )
            services = {str((d.get("properties") or {}).get("serviceName")) for d in found.get("delegations") or []}
            if subnet.delegation and subnet.delegation not in services:
                yield self.finding(
                    ctx, (*where, "delegation"), f"subnet {name} is not delegated to {subnet.delegation}"
                )
