"""Network and data exposure lint: NSG rules open to the internet, public blob access."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from hpclz.arm.walk import JsonPath, as_dict, as_list
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.exposure import REMOTE_LOGIN_PORTS, covers, is_internet
from hpclz.rules.template.context import TemplateContext

NSG = "microsoft.network/networksecuritygroups"
NSG_RULE = "microsoft.network/networksecuritygroups/securityrules"
STORAGE = "microsoft.storage/storageaccounts"


class NoAdminPortsFromInternet(Rule[TemplateContext]):
    """No NSG rule may allow inbound SSH (22) or RDP (3389) from the internet: reach HPC nodes through Bastion
    or a private network (CAF HPC landing zone security). checkov's CKV_AZURE_9/10 match only '*', 'internet'
    and '0.0.0.0', so 'Internet', 'Any' and '0.0.0.0/0' slip through; this rule catches every spelling, port
    ranges, and rules declared as child resources. arm-ttk has no NSG test."""

    id = "HPCLZ-TPL-024"
    severity = Severity.ERROR
    title = "NSG rule allows SSH or RDP from the internet"
    fix = "Restrict sourceAddressPrefix to the Bastion subnet or a private range, or deny the rule."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for path, name, props in _security_rules(ctx):
            exposed = _exposed_ports(props)
            if exposed:
                yield self.finding(
                    ctx, path, f"NSG rule {name}: inbound {'/'.join(exposed)} allowed from {', '.join(_sources(props))}"
                )


def _security_rules(ctx: TemplateContext) -> Iterator[tuple[JsonPath, str, dict[str, Any]]]:
    for found in ctx.resources:
        kind = found.type.lower()
        if kind == NSG_RULE and isinstance(found.resource.get("properties"), dict):
            yield (*found.path, "properties"), found.name, found.resource["properties"]
        elif kind == NSG:
            rules = as_list(as_dict(found.resource.get("properties")).get("securityRules"))
            for index, rule in enumerate(rules):
                if isinstance(rule, dict) and isinstance(rule.get("properties"), dict):
                    path = (*found.path, "properties", "securityRules", index, "properties")
                    yield path, f"{found.name}/{rule.get('name', index)}", rule["properties"]


def _sources(props: dict[str, Any]) -> list[str]:
    values = [props.get("sourceAddressPrefix"), *as_list(props.get("sourceAddressPrefixes"))]
    return [str(v) for v in values if v is not None]


def _exposed_ports(props: dict[str, Any]) -> list[str]:
    if str(props.get("direction", "")).lower() != "inbound" or str(props.get("access", "")).lower() != "allow":
        return []
    if str(props.get("protocol", "*")).lower() not in ("*", "tcp", "any"):
        return []
    if not any(is_internet(s) for s in _sources(props)):
        return []
    ranges = [props.get("destinationPortRange"), *as_list(props.get("destinationPortRanges"))]
    return [
        label
        for port, label in REMOTE_LOGIN_PORTS.items()
        if any(covers(str(r), port) for r in ranges if r is not None)
    ]


class BlobPublicAccessDisabled(Rule[TemplateContext]):
    """Storage accounts must set allowBlobPublicAccess to false, literally: checkpoints, datasets and job output
    must never be anonymously readable. No checkov ARM check looks at this property (see
    docs/local-services.md), nor does arm-ttk; Azure Policy "Storage account public access should be
    disallowed" is the source."""

    id = "HPCLZ-TPL-025"
    severity = Severity.ERROR
    title = "Storage account allows public blob access"
    fix = "Set properties.allowBlobPublicAccess to false on the storage account."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in ctx.resources:
            if found.type.lower() != STORAGE:
                continue
            properties = found.resource.get("properties")
            value = properties.get("allowBlobPublicAccess") if isinstance(properties, dict) else None
            if value is not False:
                yield self.finding(
                    ctx, (*found.path, "properties"), f"{found.label}: allowBlobPublicAccess is {value!r}, not false"
                )


class HttpsOnlyUnlessPrivateNfs(Rule[TemplateContext]):
    """Storage accounts must require secure transfer (supportsHttpsTrafficOnly true). The one exception Azure
    documents is an account serving NFS Azure file shares, which cannot use TLS and must then be reachable only
    from the network: "we recommend requiring secure transfer for all storage accounts, except where NFS Azure
    file shares are used with network-level security"
    (https://learn.microsoft.com/en-us/azure/storage/common/storage-require-secure-transfer,
    https://learn.microsoft.com/en-us/azure/storage/files/files-nfs-protocol#security-and-networking).
    checkov's CKV_AZURE_3 cannot tell that case apart, so the allowlist skips it and this rule keeps the check
    for every other account."""

    id = "HPCLZ-TPL-040"
    severity = Severity.ERROR
    title = "Storage account accepts plain HTTP outside the private NFS case"
    fix = (
        "Set properties.supportsHttpsTrafficOnly to true; only a FileStorage account with publicNetworkAccess "
        "Disabled and networkAcls defaultAction Deny may turn it off for NFS."
    )

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in ctx.resources:
            if found.type.lower() != STORAGE:
                continue
            properties = as_dict(found.resource.get("properties"))
            if properties.get("supportsHttpsTrafficOnly", True) is True or _private_nfs(found.resource, properties):
                continue
            yield self.finding(
                ctx,
                (*found.path, "properties"),
                f"{found.label}: supportsHttpsTrafficOnly is {properties.get('supportsHttpsTrafficOnly')!r} "
                "on an account that is not a private NFS file account",
            )


def _private_nfs(resource: dict[str, Any], properties: dict[str, Any]) -> bool:
    acls = as_dict(properties.get("networkAcls"))
    return (
        str(resource.get("kind")) == "FileStorage"
        and properties.get("publicNetworkAccess") == "Disabled"
        and acls.get("defaultAction") == "Deny"
    )


class PublicEndpointDeniedByDefault(Rule[TemplateContext]):
    """A storage account whose public endpoint is on must still refuse every network by default: no IP or VNet
    rule may open it, and only Azure's trusted services (or nothing) may pass. checkov's CKV_AZURE_59 wants the
    public endpoint off altogether and is allowlisted for the one account that cannot have it off, the VNet flow
    log account: Network Watcher writes there as a trusted Azure service ("Azure Networking Services: Store and
    analyze network traffic logs", learn.microsoft.com/azure/storage/common/storage-network-security), which
    publicNetworkAccess Disabled would block. This rule keeps CKV_AZURE_59's intent for every account."""

    id = "HPCLZ-TPL-041"
    severity = Severity.ERROR
    title = "Storage account's public endpoint is open to some network"
    fix = (
        "Set publicNetworkAccess to Disabled (reach the account through a private endpoint), or keep networkAcls "
        "defaultAction Deny with no ipRules or virtualNetworkRules and bypass AzureServices or None."
    )

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in ctx.resources:
            if found.type.lower() != STORAGE:
                continue
            properties = as_dict(found.resource.get("properties"))
            if properties.get("publicNetworkAccess") == "Disabled":
                continue
            opened = _openings(as_dict(properties.get("networkAcls")))
            if opened:
                yield self.finding(
                    ctx, (*found.path, "properties"), f"{found.label}: public endpoint on with {'; '.join(opened)}"
                )


def _openings(acls: dict[str, Any]) -> list[str]:
    out = []
    if acls.get("defaultAction") != "Deny":
        out.append(f"networkAcls defaultAction {acls.get('defaultAction')!r}")
    if as_list(acls.get("ipRules")) or as_list(acls.get("virtualNetworkRules")):
        out.append("IP or VNet rules")
    if str(acls.get("bypass", "AzureServices")) not in ("AzureServices", "None"):
        out.append(f"bypass {acls.get('bypass')!r}")
    return out
