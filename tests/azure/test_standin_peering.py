"""The stand-in refuses a spoke peering that uses the gateways of a hub without one, as ARM does
(RemoteVnetHasNoGateways), and lists collections (a resource group's gateways) as ARM lists them; preflight's HPCLZ-NET-102
catches the same hub before any PUT."""

from __future__ import annotations

from typing import Any

from hpclz.azure import existing
from hpclz.azure.arm import Arm, deployment_body
from hpclz.render.model import Deployment
from tests.support.arm_standin import ArmStandIn
from tests.support.existing_resources import spec
from tests.support.standin_deployments import finished

HUB_RG = "/subscriptions/00000000-0000-0000-0000-00000000c0de/resourceGroups/rg-hub"
HUB_ID = f"{HUB_RG}/providers/Microsoft.Network/virtualNetworks/vnet-hub"


def _spoke(use_remote_gateways: bool) -> Deployment:
    vnet = {
        "type": "Microsoft.Network/virtualNetworks",
        "apiVersion": "2024-05-01",
        "name": "vnet1",
        "location": "eastus2",
        "properties": {"addressSpace": {"addressPrefixes": ["10.1.0.0/16"]}, "subnets": []},
    }
    peering = {
        "type": "Microsoft.Network/virtualNetworks/virtualNetworkPeerings",
        "apiVersion": "2024-05-01",
        "name": "vnet1/to-hub",
        "dependsOn": ["[resourceId('Microsoft.Network/virtualNetworks', 'vnet1')]"],
        "properties": {
            "remoteVirtualNetwork": {"id": HUB_ID},
            "allowVirtualNetworkAccess": True,
            "useRemoteGateways": use_remote_gateways,
        },
    }
    template = {"resources": [vnet, peering]}
    return Deployment(
        name="net",
        component="network",
        scope="resourceGroup",
        resource_group="rg1",
        location="eastus2",
        template=template,
    )


def _hub() -> dict[str, Any]:
    gateway_subnet = {"name": "GatewaySubnet", "id": f"{HUB_ID}/subnets/GatewaySubnet", "properties": {}}
    return {
        "id": HUB_ID,
        "name": "vnet-hub",
        "type": "Microsoft.Network/virtualNetworks",
        "properties": {"subnets": [gateway_subnet]},
    }


def _run(adapter: Arm, d: Deployment) -> dict[str, Any]:
    adapter.submit(d, deployment_body(d, {}, {}))
    return finished(adapter, d)


def test_use_remote_gateways_without_a_hub_gateway_fails_with_arms_error(arm: ArmStandIn, adapter: Arm) -> None:
    arm.world.resources[HUB_ID.lower()] = _hub()
    remote = _run(adapter, _spoke(use_remote_gateways=True))
    assert remote["properties"]["provisioningState"] == "Failed"
    [inner] = remote["properties"]["error"]["details"][0]["details"]
    peering_id = "/subscriptions/00000000-0000-0000-0000-00000000c0de/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet1/virtualNetworkPeerings/to-hub"
    assert inner == {
        "code": "RemoteVnetHasNoGateways",
        "message": f"Peering {peering_id} cannot have UseRemoteGateway flag set to true because remote virtual network "
        f"{HUB_ID} referenced by the peering does not have any gateways.",
    }
    assert _run(adapter, _spoke(use_remote_gateways=False))["properties"]["provisioningState"] == "Succeeded"


def test_a_gateway_in_the_hubs_gateway_subnet_lets_the_peering_through(arm: ArmStandIn, adapter: Arm) -> None:
    arm.world.resources[HUB_ID.lower()] = _hub()
    assert existing.virtual_network_gateways(adapter, HUB_ID) == []  # an empty collection, not a 404
    gateway = spec(
        "vnet_gateway_list_first",
        **{
            "/subscriptions/subid/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet1": HUB_ID,
            "/subscriptions/subid/resourceGroups/rg1": HUB_RG,
        },
    )
    arm.world.resources[gateway["id"].lower()] = gateway
    assert [g["name"] for g in existing.virtual_network_gateways(adapter, HUB_ID) or []] == ["vpngw1"]
    assert _run(adapter, _spoke(use_remote_gateways=True))["properties"]["provisioningState"] == "Succeeded"
