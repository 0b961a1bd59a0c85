"""Deletes Azure refuses because something still uses the resource, with Azure's error codes and messages.

Each code and message is as Azure returned it in a published capture:
- InUseNetworkSecurityGroupCannotBeDeleted: "Network security group <id> cannot be deleted because it is in use by
  the following resources: <ids>. In order to delete the Network security group, remove the association with the
  resource(s)." (github.com/pulumi/pulumi-azure-native issue 3051; github.com/DataBiosphere/terra-workspace-manager
  pull 502, deleting an NSG its subnet still names).
- PublicIPAddressCannotBeDeleted: "Public IP address <id> can not be deleted since it is still allocated to resource
  <id>." (github.com/ernestio/ernest issue 514).
- InUseSubnetCannotBeDeleted: "Subnet <name> is in use by <id> and cannot be deleted. In order to delete the subnet,
  delete all the resources within the subnet. See aka.ms/deletesubnet." (github.com/microsoft/MCW-Business-continuity-
  and-disaster-recovery issue 53), also for a VNet delete while one of its subnets is in use
  (github.com/actions/runner-images issue 7691, VirtualNetworksClient#Delete).
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.arm_standin.behaviours import Refusal

NSG = "microsoft.network/networksecuritygroups"
PUBLIC_IP = "microsoft.network/publicipaddresses"
VNET = "microsoft.network/virtualnetworks"
SUBNET = "microsoft.network/virtualnetworks/subnets"


def _users(resources: dict[str, dict[str, Any]], target: str, outside: str) -> list[str]:
    """IDs of resources (not under `outside`) whose body names `target` as an ID."""
    quoted = json.dumps(target)
    return sorted(
        str(body["id"])
        for key, body in resources.items()
        if key != outside and not key.startswith(outside + "/") and quoted in json.dumps(body).lower()
    )


def in_use_refusal(resources: dict[str, dict[str, Any]], rid: str) -> Refusal | None:
    key = rid.lower()
    found = resources.get(key)
    if found is None:
        return None
    rtype = str(found.get("type", "")).lower()
    if rtype == NSG:
        users = _users(resources, key, key)
        if users:
            return Refusal(
                "InUseNetworkSecurityGroupCannotBeDeleted",
                f"Network security group {rid} cannot be deleted because it is in use by the following resources: "
                f"{', '.join(users)}. In order to delete the Network security group, remove the association with "
                "the resource(s).",
            )
    if rtype == PUBLIC_IP:
        users = _users(resources, key, key)
        if users:
            return Refusal(
                "PublicIPAddressCannotBeDeleted",
                f"Public IP address {rid} can not be deleted since it is still allocated to resource {users[0]}.",
            )
    if rtype in (SUBNET, VNET):
        vnet = key.split("/subnets/")[0]
        subnets = [key] if rtype == SUBNET else [k for k in resources if k.startswith(vnet + "/subnets/")]
        for subnet in subnets:
            users = _users(resources, subnet, vnet)
            if users:
                return Refusal(
                    "InUseSubnetCannotBeDeleted",
                    f"Subnet {subnet.rsplit('/', 1)[-1]} is in use by {users[0]} and cannot be deleted. In order to "
                    "delete the subnet, delete all the resources within the subnet. See aka.ms/deletesubnet.",
                )
    return None
