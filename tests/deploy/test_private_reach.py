"""Which private endpoints plain destroy keeps (hpclz.deploy.private_reach through destroy.kept_set), on records
shaped as ARM returns a private endpoint: azure-rest-api-specs specification/network/resource-manager/
Microsoft.Network/stable/2024-05-01/examples/PrivateEndpointCreate.json (201 body; its privateLinkServiceId, a
Private Link service there, is a storage account here, and its IDs are in one subscription)."""

from __future__ import annotations

from typing import Any

from hpclz.deploy.destroy import kept_set
from hpclz.deploy.private_reach import link_targets
from hpclz.state.model import ResourceRecord

RG = "/subscriptions/subId/resourceGroups/rg1/providers"
ACCOUNT = f"{RG}/Microsoft.Storage/storageAccounts/stdata"
SUBNET = f"{RG}/Microsoft.Network/virtualNetworks/myVnet/subnets/mySubnet"


def _record(rtype: str, rid: str, body: dict[str, Any] | None = None, data: bool = False) -> ResourceRecord:
    return ResourceRecord(
        id=rid,
        type=rtype,
        name=rid.rsplit("/", 1)[-1],
        api_version="2024-05-01",
        deployment="d",
        data_bearing=data,
        properties={"properties": body or {}},
    )


def _endpoint(connections: str = "privateLinkServiceConnections") -> ResourceRecord:
    body = {
        "provisioningState": "Succeeded",
        connections: [
            {
                "id": f"{RG}/Microsoft.Network/privateEndpoints/testPe/privateLinkServiceConnections/plsconnection1",
                "properties": {
                    "privateLinkServiceId": ACCOUNT,
                    "groupIds": ["blob"],
                    "privateLinkServiceConnectionState": {
                        "status": "Approved",
                        "description": "Auto-approved",
                        "actionsRequired": "None",
                    },
                },
            }
        ],
        "subnet": {"id": SUBNET},
        "customNetworkInterfaceName": "testPeNic",
    }
    return _record("Microsoft.Network/privateEndpoints", f"{RG}/Microsoft.Network/privateEndpoints/testPe", body)


def _zone_group() -> ResourceRecord:
    zone = "/subscriptions/subId/resourceGroups/rg1/providers/Microsoft.Network/privateDnsZones/privatelink.blob.core.windows.net"
    return _record(
        "Microsoft.Network/privateEndpoints/privateDnsZoneGroups",
        f"{RG}/Microsoft.Network/privateEndpoints/testPe/privateDnsZoneGroups/default",
        {"privateDnsZoneConfigs": [{"name": "blob", "properties": {"privateDnsZoneId": zone}}]},
    )


def _zone() -> ResourceRecord:
    return _record(
        "Microsoft.Network/privateDnsZones", f"{RG}/Microsoft.Network/privateDnsZones/privatelink.blob.core.windows.net"
    )


def _account(public: str) -> ResourceRecord:
    return _record("Microsoft.Storage/storageAccounts", ACCOUNT, {"publicNetworkAccess": public}, data=True)


def test_the_endpoint_of_a_kept_private_account_stays_with_its_dns_registration() -> None:
    endpoint, group, zone, vnet = (
        _endpoint(),
        _zone_group(),
        _zone(),
        _record("Microsoft.Network/virtualNetworks", f"{RG}/Microsoft.Network/virtualNetworks/myVnet"),
    )
    kept = kept_set([_account("Disabled"), endpoint, group, zone, vnet], include_data=False)
    assert kept[endpoint.id.lower()] == (
        "reaches kept stdata privately: its public network access is disabled, so only private endpoints reach it"
    )
    assert kept[group.id.lower()] == "resolves kept testPe to its private address"
    assert kept[zone.id.lower()] == "used by kept default"  # the zone group names the zone
    assert (
        kept[vnet.id.lower()] == "used by kept testpe"
    )  # (names from IDs, lower-cased) the endpoint's subnet is in it


def test_an_account_open_to_public_networks_keeps_its_endpoint_without_the_public_access_reason() -> None:
    endpoint = _endpoint()
    kept = kept_set([_account("Enabled"), endpoint], include_data=False)
    assert kept[endpoint.id.lower()] == "reaches kept stdata privately"


def test_a_manual_approval_connection_counts_too() -> None:
    endpoint = _endpoint("manualPrivateLinkServiceConnections")
    assert link_targets(endpoint) == [ACCOUNT]
    assert endpoint.id.lower() in kept_set([_account("Disabled"), endpoint], include_data=False)


def test_everything_goes_with_include_data_and_an_endpoint_of_data_not_kept_goes() -> None:
    records = [_account("Disabled"), _endpoint(), _zone_group(), _zone()]
    assert kept_set(records, include_data=True) == {}
    # An endpoint in a kept VNet (kept for another reason) whose target is not kept: the subnet is no reason.
    vnet = _record("Microsoft.Network/virtualNetworks", f"{RG}/Microsoft.Network/virtualNetworks/myVnet")
    server = _record(
        "Microsoft.DBforMySQL/flexibleServers",
        f"{RG}/Microsoft.DBforMySQL/flexibleServers/db",
        {"network": {"delegatedSubnetResourceId": f"{vnet.id}/subnets/db"}},
        data=True,
    )
    other = _record("Microsoft.Storage/storageAccounts", ACCOUNT, {"publicNetworkAccess": "Disabled"})
    kept = kept_set([server, vnet, other, _endpoint()], include_data=False)
    assert vnet.id.lower() in kept and _endpoint().id.lower() not in kept
