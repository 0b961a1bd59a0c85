"""Live NSG rules for an `existing` VNet: hpclz cannot attach its NSGs to subnets it does not own, so the NSGs
already there must give the posture the config asks for and must not block what the cluster needs.

An NSG is evaluated as Azure does (hpclz.rules.nsgflow). Shapes: azure-rest-api-specs Microsoft.Network 2024-05-01
examples/NetworkSecurityGroupGet.json (securityRules, defaultSecurityRules).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hpclz.config.base import Disabled
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.network import VNET, ExistingSubnet, existing_subnets
from hpclz.rules.nsgflow import first_match

# "Your network security group must allow inbound and outbound access on port 988 and ports 1019-1023"
# (MicrosoftDocs/azure-stack-docs@f1e86c5 azure-managed-lustre/amlfs-prerequisites.md, "Subnet access and
# permissions"); configure-network-security-group.md gives the flows: clients -> file system subnet (inbound
# rule 111) and file system subnet -> clients (outbound rule 108), TCP.
LUSTRE_PORTS = (988, 1019, 1020, 1021, 1022, 1023)
LUSTRE_CLIENTS = ("admin", "compute")  # scheduler and login nodes mount Lustre as the compute nodes do


def nsg_id(subnet: ExistingSubnet) -> str | None:
    found = ((subnet.actual or {}).get("networkSecurityGroup") or {}).get("id")
    return str(found).lower() if found else None


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
