"""Collection GETs and peering refusals: what ARM answers for the reads and writes around an `existing` block.

A collection is a provider path that ends in a resource type rather than a name: after `providers/<namespace>`
the segments alternate type, name, so an odd count ends in a type. ARM lists such a collection as
{"value": [...]}, empty when nothing is there (e.g. Virtual Network Gateways - List, azure-rest-api-specs
Microsoft.Network 2024-05-01 examples/VirtualNetworkGatewayList.json).
"""

from __future__ import annotations

from typing import Any

from tests.support.arm_standin.behaviours import Refusal

PEERING = "microsoft.network/virtualnetworks/virtualnetworkpeerings"


def is_collection(path: str) -> bool:
    tail = path.lower().rsplit("/providers/", 1)
    if len(tail) != 2:
        return False
    segments = [s for s in tail[1].split("/") if s]
    return len(segments) >= 2 and len(segments[1:]) % 2 == 1


def collection(resources: dict[str, dict[str, Any]], path: str) -> dict[str, Any]:
    """The stored resources directly under `path` (its children of that type), as ARM lists them."""
    prefix = path.lower().rstrip("/") + "/"
    return {
        "value": [r for key, r in sorted(resources.items()) if key.startswith(prefix) and "/" not in key[len(prefix) :]]
    }


def _has_gateway(vnet: dict[str, Any], resources: dict[str, dict[str, Any]]) -> bool:
    subnet_id = f"{vnet.get('id', '')}/subnets/GatewaySubnet".lower()
    for subnet in (vnet.get("properties") or {}).get("subnets") or []:
        if str(subnet.get("name", "")).lower() == "gatewaysubnet":
            configs = (subnet.get("properties") or {}).get("ipConfigurations") or []
            if any("/virtualnetworkgateways/" in str(c.get("id", "")).lower() for c in configs):
                return True
    for resource in resources.values():
        if str(resource.get("type", "")).lower() != "microsoft.network/virtualnetworkgateways":
            continue
        for config in (resource.get("properties") or {}).get("ipConfigurations") or []:
            if str(((config.get("properties") or {}).get("subnet") or {}).get("id", "")).lower() == subnet_id:
                return True
    return False


def remote_gateway_refusal(
    peering_id: str, body: dict[str, Any], resources: dict[str, dict[str, Any]]
) -> Refusal | None:
    """A peering PUT with useRemoteGateways whose remote VNet has no gateway. Code and message as ARM returns them
    (captured in hashicorp/terraform#30569 and Azure/bicep#12191). A remote VNet the stand-in does not hold (a hub
    in a subscription it does not model) is not judged."""
    props = body.get("properties") or {}
    if not props.get("useRemoteGateways"):
        return None
    remote_id = str((props.get("remoteVirtualNetwork") or {}).get("id", ""))
    remote = resources.get(remote_id.lower())
    if remote is None or _has_gateway(remote, resources):
        return None
    return Refusal(
        "RemoteVnetHasNoGateways",
        f"Peering {peering_id} cannot have UseRemoteGateway flag set to true because remote virtual network "
        f"{remote_id} referenced by the peering does not have any gateways.",
    )
