"""Live NSG rules for an `existing` VNet: hpclz cannot attach its NSGs to subnets it does not own, so the NSGs
already there must give the posture the config asks for and must not block what the cluster needs.

An NSG is evaluated as Azure does: its rules and the default rules, by priority, the first match decides
(learn.microsoft.com/azure/virtual-network/network-security-group-how-it-works). Shapes: azure-rest-api-specs
Microsoft.Network 2024-05-01 examples/NetworkSecurityGroupGet.json (securityRules, defaultSecurityRules).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from ipaddress import ip_network
from typing import Any

from hpclz.config.base import Disabled
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.network import VNET, ExistingSubnet, existing_subnets

# "Your network security group must allow inbound and outbound access on port 988 and ports 1019-1023"
# (MicrosoftDocs/azure-stack-docs@f1e86c5 azure-managed-lustre/amlfs-prerequisites.md, "Subnet access and
# permissions"); configure-network-security-group.md gives the flows: clients -> file system subnet (inbound
# rule 111) and file system subnet -> clients (outbound rule 108), TCP.
LUSTRE_PORTS = (988, 1019, 1020, 1021, 1022, 1023)
LUSTRE_CLIENTS = ("admin", "compute")  # scheduler and login nodes mount Lustre as the compute nodes do
# Address prefixes that cover any address inside the VNet; other service tags (Internet, AzureCloud...) do not.
WITHIN_VNET = {"*", "any", "virtualnetwork"}


def nsg_id(subnet: ExistingSubnet) -> str | None:
    found = ((subnet.actual or {}).get("networkSecurityGroup") or {}).get("id")
    return str(found).lower() if found else None


def _listed(props: dict[str, Any], single: str, plural: str) -> list[str]:
    """A rule's addresses or ports. A rule on application security groups has no address prefixes; whom they
    hold is not read, so such a rule matches nothing here rather than everything."""
    values = [str(v) for v in props.get(plural) or []]
    return values or ([str(props[single])] if props.get(single) else [])


def _address_matches(prefix: str, cidr: str) -> bool:
    if prefix.lower() in WITHIN_VNET:
        return True
    try:
        return ip_network(prefix, strict=False).overlaps(ip_network(cidr, strict=False))
    except ValueError:
        return False  # a service tag for something outside the VNet


def _port_matches(spec: str, port: int) -> bool:
    if spec.strip() == "*":
        return True
    low, _, high = spec.strip().partition("-")
    try:
        return int(low) <= port <= int(high or low)
    except ValueError:
        return False


def _matches(props: dict[str, Any], direction: str, source: str, destination: str, port: int) -> bool:
    return (
        props.get("direction") == direction
        and str(props.get("protocol", "*")).lower() in ("*", "tcp")
        and any(_address_matches(p, source) for p in _listed(props, "sourceAddressPrefix", "sourceAddressPrefixes"))
        and any(
            _address_matches(p, destination)
            for p in _listed(props, "destinationAddressPrefix", "destinationAddressPrefixes")
        )
        and any(_port_matches(s, port) for s in _listed(props, "destinationPortRange", "destinationPortRanges"))
    )


def first_match(nsg: dict[str, Any], direction: str, source: str, destination: str, port: int) -> dict[str, Any] | None:
    """The rule that decides a TCP flow, or None when none matches (then the defaults, VNet to VNet, allow it)."""
    props = nsg.get("properties") or {}
    rules: list[dict[str, Any]] = [*(props.get("securityRules") or []), *(props.get("defaultSecurityRules") or [])]
    rules.sort(key=lambda r: int((r.get("properties") or {}).get("priority", 65500)))
    return next((r for r in rules if _matches(r.get("properties") or {}, direction, source, destination, port)), None)


class ExistingSubnetWithoutNsg(Rule[LiveContext]):
    """The config's `nsg: true` (the default) promises a subnet that denies Internet inbound. In a VNet hpclz
    creates it attaches its NSG; in an existing VNet it cannot, so the subnet must already carry one."""

    id = "HPCLZ-NET-103"
    severity = Severity.ERROR
    title = "An existing subnet has no network security group"
    fix = "Associate an NSG with the subnet (Internet inbound denied), or set its nsg: false to accept it bare."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for subnet in existing_subnets(ctx):
            if subnet.actual is not None and subnet.config.nsg and nsg_id(subnet) is None:
                yield self.finding(
                    ctx, (*VNET, "subnets", subnet.role, "nsg"), f"subnet {subnet.name} has no network security group"
                )


class NsgBlocksLustre(Rule[LiveContext]):
    """Lustre clients (scheduler, login and compute nodes) and the Managed Lustre file system talk TCP on 988
    and 1019-1023 in both directions; an NSG on either subnet that denies it leaves the mount hanging at boot."""

    id = "HPCLZ-NET-104"
    severity = Severity.ERROR
    title = "An NSG on the existing VNet blocks the Lustre ports"
    fix = "Allow TCP 988 and 1019-1023 between the Lustre subnet and the admin and compute subnets, both ways."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        if isinstance(ctx.loaded.config.storage.lustre, Disabled):
            return
        subnets = {s.role: s for s in existing_subnets(ctx) if s.actual is not None}
        lustre = subnets.get("lustre")
        if lustre is None:
            return
        for role in LUSTRE_CLIENTS:
            client = subnets.get(role)
            if client is not None:
                yield from self._flows(ctx, client, lustre)

    def _flows(self, ctx: LiveContext, client: ExistingSubnet, lustre: ExistingSubnet) -> Iterator[Finding]:
        a, b = str(client.config.cidr), str(lustre.config.cidr)
        checks = (  # (NSG's subnet, direction, source, destination)
            (lustre, "Inbound", a, b),
            (lustre, "Outbound", b, a),
            (client, "Outbound", a, b),
            (client, "Inbound", b, a),
        )
        for holder, direction, source, destination in checks:
            denied = self._denied(ctx, holder, direction, source, destination)
            if denied:
                yield self.finding(ctx, (*VNET, "subnets", holder.role), denied)

    def _denied(self, ctx: LiveContext, holder: ExistingSubnet, direction: str, source: str, dest: str) -> str | None:
        found = nsg_id(holder)
        nsg = ctx.nsgs.get(found) if found else None
        if not nsg:
            return None
        for port in LUSTRE_PORTS:
            rule = first_match(nsg, direction, source, dest, port)
            props = (rule or {}).get("properties") or {}
            if rule is not None and props.get("access") == "Deny":
                return (
                    f"NSG {nsg.get('name')} rule {rule.get('name')} (priority {props.get('priority')}) denies "
                    f"{direction.lower()} TCP {port} from {source} to {dest}; Lustre needs 988 and 1019-1023"
                )
        return None
