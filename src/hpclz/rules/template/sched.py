"""Slurm's /sched on an Azure Files NFS share: root on a machine that reaches the share is root on the munge key.

cyclecloud-slurm keeps the cluster's munge key in /sched/<cluster>/munge.key and every node copies it from there
(Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py l.139, l.328-354); whoever holds the key can forge
any user's credential to slurmctld and slurmd, and so run jobs as anyone. The scheduler writes the key as root and
chowns it to munge, which a root-squashing share would refuse, so the share keeps NoRootSquash (the schema's
default: "The default is NoRootSquash", Microsoft.Storage 2023-05-01 FileShareProperties.rootSquash) and what must
be narrow is who reaches it: only the cluster's own subnets, never the hub, peered VNets or on-premises.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator
from typing import Any

from hpclz.arm.walk import as_dict, as_list
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext

SHARE = "microsoft.storage/storageaccounts/fileservices/shares"
ENDPOINT = "microsoft.network/privateendpoints"
VNET = "microsoft.network/virtualnetworks"
NSG = "microsoft.network/networksecuritygroups"
NFS_PORT = 2049
_LAST_NAME = re.compile(r"'([^']+)'\)\]$")
# Sources that are never "beyond the VNet" whatever the network around it: the platform's own probes.
_LOCAL_TAGS = {"azureloadbalancer"}


def _name(reference: str) -> str:
    """The last name of a `[resourceId(..., 'name')]` expression, or the last segment of a plain ID."""
    found = _LAST_NAME.search(reference)
    return found.group(1) if found else reference.rstrip("/").rsplit("/", 1)[-1]


def _resources(ctx: TemplateContext) -> Iterator[dict[str, Any]]:
    for template in (ctx.template, *ctx.plan_templates.values()):
        yield from (r for r in as_list(template.get("resources")) if isinstance(r, dict))


def _of(ctx: TemplateContext, kind: str) -> list[dict[str, Any]]:
    return [r for r in _resources(ctx) if str(r.get("type", "")).lower() == kind]


def _covers_nfs(rule: dict[str, Any]) -> bool:
    props = as_dict(rule.get("properties"))
    if str(props.get("direction", "")).lower() != "inbound" or str(props.get("protocol", "*")).lower() not in {
        "tcp",
        "*",
    }:
        return False
    ranges = [props.get("destinationPortRange"), *as_list(props.get("destinationPortRanges"))]
    for text in (str(r) for r in ranges if r is not None):
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            if low == "*" or (low.isdigit() and int(low) <= NFS_PORT <= int(high or low)):
                return True
    return False


def _sources(rule: dict[str, Any]) -> list[str]:
    props = as_dict(rule.get("properties"))
    return [str(s) for s in [props.get("sourceAddressPrefix"), *as_list(props.get("sourceAddressPrefixes"))] if s]


def _inside(source: str, spaces: list[ipaddress.IPv4Network]) -> bool:
    if source.lower() in _LOCAL_TAGS:
        return True
    try:
        network = ipaddress.ip_network(source, strict=False)
    except ValueError:
        return False  # a service tag (VirtualNetwork, Internet, *) or an expression: reaches beyond the VNet
    return any(network.subnet_of(space) for space in spaces if network.version == space.version)


def reach_beyond(rules: list[dict[str, Any]], spaces: list[ipaddress.IPv4Network]) -> str | None:
    """Why NFS reaches the subnet from outside the VNet's address spaces under these NSG rules, or None when an
    inbound Deny of every source stops it first. Rules are read in priority order, the first match deciding; when
    none denies every source, the NSG's default AllowVnetInBound (65000) lets the VirtualNetwork tag in, which
    covers peered VNets and on-premises ranges (learn.microsoft.com/azure/virtual-network/service-tags-overview)."""
    ordered = sorted((r for r in rules if _covers_nfs(r)), key=lambda r: int(as_dict(r.get("properties"))["priority"]))
    for rule in ordered:
        access = str(as_dict(rule.get("properties")).get("access", "")).lower()
        sources = _sources(rule)
        if access == "allow" and not all(_inside(s, spaces) for s in sources):
            return f"rule {rule.get('name')} allows NFS from {', '.join(sources)}"
        if access == "deny" and any(s in {"*", "VirtualNetwork"} for s in sources):
            return None
    return "nothing denies NFS before the default AllowVnetInBound lets the VirtualNetwork tag in"


class SchedShareReachedOnlyByTheCluster(Rule[TemplateContext]):
    """The Azure Files NFS share that holds /sched, and so the munge key, squashes no root: root on any machine that
    reaches it reads the key and can then act as any Slurm user. Its private endpoint must therefore be reachable on
    NFS (TCP 2049, learn.microsoft.com/azure/storage/files/files-nfs-protocol) only from the zone's own address space:
    the endpoint's subnet applies its NSG to the endpoint (privateEndpointNetworkPolicies Enabled,
    learn.microsoft.com/azure/private-link/disable-private-endpoint-network-policy), and that NSG must deny NFS from
    the VirtualNetwork tag, which takes in peered VNets and on-premises ranges, before its default rules do."""

    id = "HPCLZ-TPL-055"
    severity = Severity.ERROR
    title = "The /sched NFS share (munge key, no root squash) is reachable beyond the cluster's VNet"
    fix = (
        "On the private-endpoints subnet's NSG, allow TCP 2049 from the cluster's subnets and deny it from '*' "
        "(hpclz renders AllowNfsFromCluster/DenyNfsFromElsewhere), with privateEndpointNetworkPolicies Enabled."
    )

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in ctx.resources:
            if found.type.lower() != SHARE or not found.name.endswith("/sched"):
                continue
            props = as_dict(found.resource.get("properties"))
            if str(props.get("enabledProtocols", "")).upper() != "NFS" or props.get(
                "rootSquash", "NoRootSquash"
            ) not in ("NoRootSquash",):
                continue
            why = self._reach(ctx, found.name.split("/", 1)[0])
            if why:
                yield self.finding(ctx, found.path, f"{found.name}: munge.key's share, without root squash: {why}")

    def _reach(self, ctx: TemplateContext, account: str) -> str | None:
        subnets = {
            _name(str(as_dict(as_dict(r.get("properties")).get("subnet")).get("id", "")))
            for r in _of(ctx, ENDPOINT)
            if any(
                _name(str(as_dict(c.get("properties")).get("privateLinkServiceId", ""))) == account
                for c in as_list(as_dict(r.get("properties")).get("privateLinkServiceConnections"))
            )
        }
        if not subnets:
            return None  # no private endpoint in this plan: the storage account's own rules decide (HPCLZ-TPL-026)
        nsgs = {str(r.get("name")): r for r in _of(ctx, NSG)}
        for vnet in _of(ctx, VNET):
            vprops = as_dict(vnet.get("properties"))
            spaces = [
                ipaddress.ip_network(p, strict=False)
                for p in as_list(as_dict(vprops.get("addressSpace")).get("addressPrefixes"))
            ]
            for subnet in as_list(vprops.get("subnets")):
                sprops = as_dict(as_dict(subnet).get("properties"))
                if as_dict(subnet).get("name") not in subnets:
                    continue
                name = as_dict(subnet).get("name")
                if str(sprops.get("privateEndpointNetworkPolicies", "Disabled")) not in (
                    "Enabled",
                    "NetworkSecurityGroupEnabled",
                ):
                    return f"subnet {name} does not apply its NSG to private endpoints"
                nsg = nsgs.get(_name(str(as_dict(sprops.get("networkSecurityGroup")).get("id", ""))))
                if nsg is None:
                    return f"subnet {name} has no NSG, so the VirtualNetwork tag reaches it"
                why = reach_beyond(as_list(as_dict(nsg.get("properties")).get("securityRules")), spaces)  # type: ignore[arg-type]
                if why:
                    return f"{nsg.get('name')} on subnet {name}: {why}"
        return None
