"""Reads of what an `existing` config block names and hpclz does not own: network security groups, the hub's
gateways, a Managed Lustre file system, a NetApp account's volumes and a Key Vault.

Network reads go through azure-mgmt-network when the resource is in the deploying subscription (the client is
bound to one subscription); anything else is read by ID with the provider's pinned API version. Every answer is
a plain dict in the REST shape; None means ARM answered 404.
"""

from __future__ import annotations

from typing import Any

from hpclz.arm.api_versions import pinned_version
from hpclz.azure.arm import KEY_VAULT_API, NETWORK_API, Arm, _unless_missing, plain_dict

LUSTRE_API = pinned_version("Microsoft.StorageCache/amlFilesystems") or "2024-03-01"
NETAPP_API = pinned_version("Microsoft.NetApp/netAppAccounts/capacityPools/volumes") or "2024-07-01"


def _parts(resource_id: str) -> tuple[str, str, str]:
    """(subscription, resource group, name) of an ARM resource ID."""
    parts = resource_id.strip("/").split("/")
    return parts[1], parts[3], parts[-1]


def _local(arm: Arm, resource_id: str) -> bool:
    return _parts(resource_id)[0].lower() == arm.subscription_id.lower()


def network_security_group(arm: Arm, resource_id: str) -> dict[str, Any] | None:
    """An NSG with its own and its default security rules (Network Security Groups - Get)."""
    if not _local(arm, resource_id):
        return arm.get_resource(resource_id, NETWORK_API)
    _, group, name = _parts(resource_id)
    return _unless_missing(lambda: arm.clients.network.network_security_groups.get(group, name))


def virtual_network_gateways(arm: Arm, vnet_id: str) -> list[dict[str, Any]]:
    """The VPN/ExpressRoute gateways in a VNet's resource group (Virtual Network Gateways - List). A hub in another
    subscription is listed by path: the network client is bound to the deploying subscription."""
    subscription, group, _ = _parts(vnet_id)
    if _local(arm, vnet_id):
        return [plain_dict(g) for g in arm.clients.network.virtual_network_gateways.list(group)]
    path = f"/subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Network/virtualNetworkGateways"
    return _list(arm, path, NETWORK_API)


def lustre_file_system(arm: Arm, resource_id: str) -> dict[str, Any] | None:
    """An Azure Managed Lustre file system (amlFilesystems - Get): sku, capacity, subnet, clientInfo, hsm, health."""
    return arm.get_resource(resource_id, LUSTRE_API)


def key_vault(arm: Arm, resource_id: str) -> dict[str, Any] | None:
    """A vault's management-plane properties (Vaults - Get): RBAC mode, soft delete, purge protection."""
    return arm.get_resource(resource_id, KEY_VAULT_API)


def _list(arm: Arm, collection: str, api_version: str) -> list[dict[str, Any]]:
    """A child collection ({value, nextLink}) by path, every page; the generic client has no call for children."""
    from azure.core.rest import HttpRequest

    items: list[dict[str, Any]] = []
    request = HttpRequest("GET", collection, params={"api-version": api_version})
    while True:
        response = arm.clients.resources.send_request(request)
        response.raise_for_status()
        page = dict(response.json())
        items.extend(page.get("value") or [])
        if not page.get("nextLink"):
            return items
        request = HttpRequest("GET", str(page["nextLink"]))


def netapp_volumes(arm: Arm, account_id: str) -> list[dict[str, Any]] | None:
    """Every volume of a NetApp account, across its capacity pools (Pools - List, Volumes - List); None when the
    account does not exist."""
    if arm.get_resource(account_id, NETAPP_API) is None:
        return None
    volumes: list[dict[str, Any]] = []
    for pool in _list(arm, f"{account_id.rstrip('/')}/capacityPools", NETAPP_API):
        volumes.extend(_list(arm, f"{str(pool['id']).rstrip('/')}/volumes", NETAPP_API))
    return volumes
