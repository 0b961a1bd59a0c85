"""Network reach for the stand-in's data planes: whether a call from a given place gets to a storage account's Blob
endpoint or a key vault at all, before anyone asks who the caller is allowed to be.

A data-plane call arrives one of two ways (learn.microsoft.com/azure/storage/common/storage-network-security,
"Configure Azure Storage firewalls and virtual networks"; learn.microsoft.com/azure/key-vault/general/network-security):
- through a private endpoint of the resource: only a caller in the endpoint's VNet (or a VNet peered with it) routes
  to the endpoint's private address, and it goes there only when the resource's name resolves to that address, that
  is when the private DNS zone of the sub-resource (`privatelink.blob.core.windows.net`,
  `privatelink.vaultcore.azure.net`) holds the endpoint's record (its privateDnsZoneGroup) and is linked to the
  caller's VNet (learn.microsoft.com/azure/private-link/private-endpoint-dns, "Azure services DNS zone
  configuration" and "Virtual network workloads without custom DNS server"). The resource's firewall does not apply
  to this path ("The Azure Storage firewall provides access control for the public endpoint of your storage
  account", the storage page above);
- through the public endpoint, everyone else (a VM in a VNet whose DNS gives it the public address included):
  - `publicNetworkAccess: Disabled` refuses it. For storage, the built-in policy that asks for it says this
    "disables access from any public address space outside the Azure IP range, and denies all logins that match IP or
    virtual network-based firewall rules" (azure-policy built-in-policies/policyDefinitions/Storage/
    StoragePublicNetworkAccess_AuditDeny.json, data/policy_definitions/). For Key Vault, "all traffic except private
    endpoint traffic and that that originates from trusted services will be blocked. This will override the set
    firewall rules" (azure-rest-api-specs, specification/keyvault/resource-manager/Microsoft.KeyVault/stable/
    2023-07-01/keyvault.json, VaultProperties.publicNetworkAccess);
  - `networkAcls.defaultAction: Allow` (or no networkAcls) lets it in;
  - with `Deny`, it gets in when its public address is in `ipRules` (an address or a CIDR range), when it comes
    from a subnet named in `virtualNetworkRules` that has the service's endpoint (`Microsoft.Storage`,
    `Microsoft.KeyVault`) switched on, or when it is a trusted Azure service and `bypass` names `AzureServices`
    (both pages above, "Grant access from an internet IP range", "Grant access from a virtual network",
    "Grant access to trusted Azure services").

The deploying workstation is a caller with no VNet; a test that wants a caller inside one says which subnet.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

PRIVATE_ENDPOINTS = "microsoft.network/privateendpoints"
# What each service answers a call its network does not let in, as (code, message). Blob: 403 AuthorizationFailure,
# "This request is not authorized to perform this operation." (learn.microsoft.com/rest/api/storageservices/
# blob-service-error-codes). Key Vault: 403, inner error ForbiddenByFirewall, "Client address is not authorized and
# caller is not a trusted service." (learn.microsoft.com/azure/key-vault/general/common-error-codes;
# learn.microsoft.com/azure/key-vault/general/private-link-diagnostics: "requests still get 403 response with the
# ForbiddenByFirewall inner error code").
REFUSALS = {
    "blob": ("AuthorizationFailure", "This request is not authorized to perform this operation."),
    "vault": ("ForbiddenByFirewall", "Client address is not authorized and caller is not a trusted service."),
}
# The private DNS zone of each private-link sub-resource (learn.microsoft.com/azure/private-link/private-endpoint-dns,
# "Storage" and "Security" tables).
PRIVATE_DNS_ZONES = {"blob": "privatelink.blob.core.windows.net", "vault": "privatelink.vaultcore.azure.net"}
# The service endpoint a subnet needs for a virtual network rule of the service to let it in.
SERVICE_ENDPOINTS = {"blob": ("microsoft.storage", "microsoft.storage.global"), "vault": ("microsoft.keyvault",)}


@dataclass(frozen=True)
class Origin:
    """Where a data-plane call comes from. `subnet`: the caller runs in that subnet (a VM's NIC is there); None is a
    machine outside every VNet, the deploying workstation. `address`: the public address its calls to a public
    endpoint arrive from; None means the address the stand-in sees on the connection (loopback in tests).
    `trusted_service`: the call is made by a trusted Azure service with its own identity (e.g. Azure Resource
    Manager, Azure Backup)."""

    subnet: str | None = None
    address: str | None = None
    trusted_service: str | None = None
    name: str = "workstation"


WORKSTATION = Origin()


def refusal(
    target: dict[str, Any], group: str, origin: Origin, peer: str, resources: dict[str, dict[str, Any]]
) -> str | None:
    """Why a call from `origin` (seen on the wire from `peer`) does not reach `target`'s sub-resource `group` ("blob",
    "vault"); None when it does."""
    if private_route(str(target["id"]), group, origin, resources):
        return None
    return _public_refusal(target, group, origin, peer, resources)


def data_plane_refusal(
    target: str, origin: Origin, resources: dict[str, dict[str, Any]], peer: str = "203.0.113.1"
) -> tuple[str, str] | None:
    """The network's refusal, as (code, message), of a data-plane call on `target` (a blob path under a storage
    account, `.../blobServices/default/containers/<c>[/...]`, or a secret of a vault, `.../secrets/<name>`); None when
    the call gets through, or when the account or vault is not in the world (nothing to judge). `peer`: the public
    address a caller without its own `address` is seen from (a documentation address: a VM's outbound one)."""
    lower = target.lower()
    if "/blobservices/" in lower:
        rid, group = lower.split("/blobservices/")[0], "blob"
    elif "/secrets/" in lower and "/microsoft.keyvault/vaults/" in lower:
        rid, group = lower.split("/secrets/")[0], "vault"
    else:
        return None
    found = resources.get(rid)
    if found is None or refusal(found, group, origin, peer, resources) is None:
        return None
    return REFUSALS[group]


def private_route(target_id: str, group: str, origin: Origin, resources: dict[str, dict[str, Any]]) -> bool:
    """Whether the caller reaches a private endpoint of the target for `group`, by name."""
    if origin.subnet is None:
        return False
    vnet = vnet_of(origin.subnet)
    for endpoint in resources.values():
        if str(endpoint.get("type", "")).lower() != PRIVATE_ENDPOINTS or not _connects(endpoint, target_id, group):
            continue
        endpoint_vnet = vnet_of(str(((endpoint.get("properties") or {}).get("subnet") or {}).get("id", "")))
        if _routes(vnet, endpoint_vnet, resources) and _resolves_privately(endpoint, group, vnet, resources):
            return True
    return False


def vm_subnet(vm: dict[str, Any], resources: dict[str, dict[str, Any]]) -> str | None:
    """The subnet of a VM's first NIC that names one (networkProfile.networkInterfaces -> the NIC's
    ipConfigurations[].properties.subnet.id), or None when the world does not hold it."""
    for ref in ((vm.get("properties") or {}).get("networkProfile") or {}).get("networkInterfaces", []):
        nic = resources.get(str(ref.get("id", "")).lower()) or {}
        for config in (nic.get("properties") or {}).get("ipConfigurations", []):
            subnet = ((config.get("properties") or {}).get("subnet") or {}).get("id")
            if subnet:
                return str(subnet)
    return None


def vnet_of(subnet_id: str) -> str:
    return subnet_id.lower().split("/subnets/")[0]


def _connects(endpoint: dict[str, Any], target_id: str, group: str) -> bool:
    """An approved connection of the endpoint to the target's sub-resource. A connection ARM made automatically
    (the deployer may approve on the target) carries no state in the template and is Approved
    (learn.microsoft.com/azure/private-link/private-endpoint-overview, "Access to a private link resource using
    approval workflow")."""
    props = endpoint.get("properties") or {}
    for connection in [
        *props.get("privateLinkServiceConnections", []),
        *props.get("manualPrivateLinkServiceConnections", []),
    ]:
        c = connection.get("properties") or {}
        state = (c.get("privateLinkServiceConnectionState") or {}).get("status", "Approved")
        if (
            str(c.get("privateLinkServiceId", "")).lower() == target_id.lower()
            and group in [g.lower() for g in c.get("groupIds", [])]
            and state == "Approved"
        ):
            return True
    return False


def _routes(source_vnet: str, endpoint_vnet: str, resources: dict[str, dict[str, Any]]) -> bool:
    """The caller's VNet is the endpoint's, or peered to it (learn.microsoft.com/azure/private-link/
    private-endpoint-overview: a private endpoint is reachable from peered virtual networks)."""
    if source_vnet == endpoint_vnet:
        return True
    prefix = source_vnet + "/virtualnetworkpeerings/"
    return any(
        rid.startswith(prefix)
        and str(((r.get("properties") or {}).get("remoteVirtualNetwork") or {}).get("id", "")).lower() == endpoint_vnet
        for rid, r in resources.items()
    )


def _resolves_privately(endpoint: dict[str, Any], group: str, vnet: str, resources: dict[str, dict[str, Any]]) -> bool:
    """The endpoint's record is in the sub-resource's privatelink zone, and that zone is linked to the caller's VNet;
    otherwise the name resolves to the public endpoint and the call goes there."""
    wanted = PRIVATE_DNS_ZONES[group]
    zone_groups = [
        r for rid, r in resources.items() if rid.startswith(str(endpoint["id"]).lower() + "/privatednszonegroups/")
    ]
    zones = {
        str((config.get("properties") or {}).get("privateDnsZoneId", "")).lower()
        for zg in zone_groups
        for config in (zg.get("properties") or {}).get("privateDnsZoneConfigs", [])
    }
    for zone in zones:
        if zone.rsplit("/", 1)[-1] != wanted:
            continue
        links = [r for rid, r in resources.items() if rid.startswith(zone + "/virtualnetworklinks/")]
        if any(
            str(((link.get("properties") or {}).get("virtualNetwork") or {}).get("id", "")).lower() == vnet
            for link in links
        ):
            return True
    return False


def _public_refusal(
    target: dict[str, Any], group: str, origin: Origin, peer: str, resources: dict[str, dict[str, Any]]
) -> str | None:
    props = target.get("properties") or {}
    acls = props.get("networkAcls") or {}
    trusted = origin.trusted_service is not None and "azureservices" in str(acls.get("bypass", "AzureServices")).lower()
    if str(props.get("publicNetworkAccess", "Enabled")).lower() == "disabled":
        if group == "vault" and trusted:
            return None
        return "public network access is disabled"
    if str(acls.get("defaultAction", "Allow")).lower() == "allow" or trusted:
        return None
    address = ipaddress.ip_address(origin.address or peer)
    for rule in acls.get("ipRules", []):
        if address in ipaddress.ip_network(str(rule.get("value", "")), strict=False):
            return None
    subnet = (origin.subnet or "").lower()
    named = {str(rule.get("id", "")).lower() for rule in acls.get("virtualNetworkRules", [])}
    if subnet and subnet in named and _has_service_endpoint(subnet, group, resources):
        return None
    return f"{address} is not in the firewall's rules"


def _has_service_endpoint(subnet: str, group: str, resources: dict[str, dict[str, Any]]) -> bool:
    """The subnet, as a resource of its own or inside its VNet's body, lists the service's endpoint."""
    body = resources.get(subnet)
    if body is None:
        vnet = resources.get(vnet_of(subnet)) or {}
        inline = (vnet.get("properties") or {}).get("subnets", [])
        found = [s for s in inline if f"{vnet_of(subnet)}/subnets/{str(s.get('name', '')).lower()}" == subnet]
        body = found[0] if found else {}
    services = {str(e.get("service", "")).lower() for e in (body.get("properties") or {}).get("serviceEndpoints", [])}
    return bool(services & set(SERVICE_ENDPOINTS[group]))
