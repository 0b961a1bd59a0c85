"""Deletes in reverse dependency order, against a stand-in that refuses to delete what is in use as Azure does
(tests/support/arm_standin/in_use.py cites each code)."""

from __future__ import annotations

from typing import Any

from hpclz.azure.arm import Arm
from hpclz.azure.clients import AzureClients
from hpclz.azure.errors import sdk_error
from hpclz.deploy.destroy import Action, Destroyer
from hpclz.render.model import ENVIRONMENT_TAG, MANAGED_TAG, ZONE_TAG
from hpclz.state.model import ResourceRecord, StateDocument
from tests.support.arm_standin import ArmStandIn

OURS = {MANAGED_TAG: "true", ZONE_TAG: "lz", ENVIRONMENT_TAG: "dev"}
NET = "Microsoft.Network"


def _world(arm: ArmStandIn) -> dict[str, str]:
    """A NAT gateway holding a public IP, a VNet whose subnet names an NSG and the NAT gateway; a foreign resource
    in the group keeps it from going whole, so each resource is deleted on its own."""
    base = f"/subscriptions/{arm.subscription_id}/resourceGroups/rg-lz-net/providers/{NET}"
    ids = {
        "nsg": f"{base}/networkSecurityGroups/nsg-compute",
        "pip": f"{base}/publicIPAddresses/pip-nat",
        "nat": f"{base}/natGateways/nat-lz",
        "vnet": f"{base}/virtualNetworks/vnet-lz",
    }
    subnet: dict[str, Any] = {"id": f"{ids['vnet']}/subnets/compute", "name": "compute"}
    subnet["properties"] = {"networkSecurityGroup": {"id": ids["nsg"]}, "natGateway": {"id": ids["nat"]}}
    bodies: dict[str, dict[str, Any]] = {
        "nsg": {"properties": {"securityRules": []}},
        "pip": {"properties": {"publicIPAllocationMethod": "Static"}},
        "nat": {"properties": {"publicIpAddresses": [{"id": ids["pip"]}]}},
        "vnet": {"properties": {"subnets": [subnet]}},
    }
    types = {
        "nsg": "networkSecurityGroups",
        "pip": "publicIPAddresses",
        "nat": "natGateways",
        "vnet": "virtualNetworks",
    }
    for key, rid in ids.items():
        arm.world.resources[rid.lower()] = {
            "id": rid, "name": rid.rsplit("/", 1)[-1], "type": f"{NET}/{types[key]}", "tags": OURS, **bodies[key]
        }  # fmt: skip
    arm.world.resources[subnet["id"].lower()] = {**subnet, "type": f"{NET}/virtualNetworks/subnets"}
    return ids


def test_the_stand_in_refuses_deleting_what_is_in_use_with_azures_codes(arm: ArmStandIn) -> None:
    ids = _world(arm)
    client = Arm(AzureClients(arm.subscription_id))
    failures = {}
    for key in ("nsg", "pip"):
        try:
            client.delete_resource(ids[key], "2023-09-01")
        except sdk_error() as exc:
            failures[key] = str(exc)
    assert "InUseNetworkSecurityGroupCannotBeDeleted" in failures["nsg"]
    assert "PublicIPAddressCannotBeDeleted" in failures["pip"]
    assert ids["nsg"].lower() in arm.world.resources and ids["pip"].lower() in arm.world.resources


def test_destroy_deletes_users_before_what_they_use_in_one_run(arm: ArmStandIn) -> None:
    ids = _world(arm)
    types = {
        "nsg": "networkSecurityGroups",
        "pip": "publicIPAddresses",
        "nat": "natGateways",
        "vnet": "virtualNetworks",
    }
    # In creation order, as state records them: NSG and public IP first.
    records = [
        ResourceRecord(
            id=ids[key],
            type=f"{NET}/{types[key]}",
            name=ids[key].rsplit("/", 1)[-1],
            api_version="2023-09-01",
            deployment="lz-net",
            properties=arm.world.resources[ids[key].lower()]["properties"],
        )
        for key in ("nsg", "pip", "nat", "vnet")
    ]
    doc = StateDocument(landing_zone="lz", environment="dev", resources=records)

    destroyer = Destroyer(Arm(AzureClients(arm.subscription_id)), doc, ["lz-net"])
    remaining = destroyer.run(include_data=True)

    assert {o.action for o in destroyer.outcomes} == {Action.DELETED}
    order = [o.id.rsplit("/", 1)[-1] for o in destroyer.outcomes]
    assert order.index("vnet-lz") < order.index("nsg-compute")  # its subnet names the NSG
    assert order.index("vnet-lz") < order.index("nat-lz") < order.index("pip-nat")  # the NAT gateway holds the IP
    assert remaining.resources == []


def test_a_defender_plan_the_config_dropped_is_released_and_leaves_state(arm: ArmStandIn) -> None:
    """Removing a Defender plan from the config: hpclz leaves the pricing on (it is the subscription's, docs/defender.md)
    and forgets it, so the next deploy has nothing left to do instead of failing again."""
    from hpclz.deploy.prune import delete_records, failures

    rid = f"/subscriptions/{arm.subscription_id}/providers/Microsoft.Security/pricings/VirtualMachines"
    arm.world.resources[rid.lower()] = {"id": rid, "name": "VirtualMachines", "type": "Microsoft.Security/pricings"}
    record = ResourceRecord(
        id=rid, type="Microsoft.Security/pricings", name="VirtualMachines", api_version="2024-01-01", deployment="d"
    )
    doc = StateDocument(landing_zone="lz", environment="dev", resources=[record])

    outcomes, gone = delete_records(Arm(AzureClients(arm.subscription_id)), doc, [record], ["d"])

    assert [o.action for o in outcomes] == [Action.RELEASED] and failures(outcomes) == []
    assert gone == {rid.lower()}
    assert rid.lower() in arm.world.resources  # left on in Azure
