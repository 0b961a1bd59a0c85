"""The stand-in answers the real SDK clients as the recorded ARM exchanges in tests/fixtures/arm do."""

from __future__ import annotations

import json

import pytest

from hpclz.azure.arm import Arm, deployment_body
from hpclz.render.model import Deployment
from tests.conftest import FIXTURES, require
from tests.support.arm_standin import ArmStandIn
from tests.support.standin_deployments import GROUP, finished

VNET = Deployment(
    name="net",
    component="network",
    scope="resourceGroup",
    resource_group="rg1",
    location="eastus2",
    template={
        "parameters": {"n": {"type": "string", "defaultValue": "vnet1"}, "cidr": {"type": "string"}},
        "resources": [
            {
                "type": "Microsoft.Network/virtualNetworks",
                "apiVersion": "2023-09-01",
                "name": "[parameters('n')]",
                "location": "[resourceGroup().location]",
                "properties": {"addressSpace": {"addressPrefixes": ["[parameters('cidr')]"]}},
            }
        ],
        "outputs": {
            "id": {"type": "string", "value": "[resourceId('Microsoft.Network/virtualNetworks', parameters('n'))]"}
        },
    },
    parameters={"cidr": "10.0.0.0/16"},
)


def test_recorded_fixtures_are_present() -> None:
    require((FIXTURES / "arm" / "deployment_lro_sequence.json").is_file(), "recorded ARM fixtures")


def test_put_deployment_is_201_with_async_operation_then_outputs(arm: ArmStandIn, adapter: Arm) -> None:
    recorded = json.loads((FIXTURES / "arm" / "deployment_lro_sequence.json").read_text())
    put = next(i for i in recorded["interactions"] if i["request"]["method"] == "PUT")
    first = adapter.submit(VNET, deployment_body(VNET, {}, {}))
    assert put["response"]["status"] == 201 and arm.log[-1].status == 201
    assert first["properties"]["provisioningState"] == put["response"]["body"]["properties"]["provisioningState"]
    done = finished(adapter, VNET)
    assert set(put["response"]["body"]["properties"]) - {"providers", "duration"} <= set(done["properties"])
    vnet_id = (
        f"/subscriptions/{arm.subscription_id}/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet1"
    )
    assert done["properties"]["outputs"]["id"]["value"] == vnet_id
    assert done["properties"]["outputResources"] == [{"id": vnet_id}]
    assert [o["properties"]["provisioningState"] for o in adapter.operations(VNET)] == ["Succeeded"]


def test_what_if_goes_create_then_nochange_then_modify(arm: ArmStandIn, adapter: Arm) -> None:
    assert adapter.what_if(VNET)["properties"]["changes"][0]["changeType"] == "Create"
    assert any(r.status == 202 and r.path.endswith("/whatIf") for r in arm.log)
    adapter.submit(VNET, deployment_body(VNET, {}, {}))
    finished(adapter, VNET)
    assert adapter.what_if(VNET)["properties"]["changes"][0]["changeType"] == "NoChange"
    changed = VNET.model_copy(update={"parameters": {"cidr": "10.9.0.0/16"}})
    [change] = adapter.what_if(changed)["properties"]["changes"]
    assert change["changeType"] == "Modify"
    # Item by item, as the documented VNet example (tests/fixtures/arm/whatif_array_items.json): the old range
    # deleted at its index, the new one created at its own.
    assert change["delta"] == [
        {
            "path": "properties.addressSpace.addressPrefixes",
            "propertyChangeType": "Array",
            "children": [
                {"path": "0", "propertyChangeType": "Delete", "before": "10.0.0.0/16"},
                {"path": "0", "propertyChangeType": "Create", "after": "10.9.0.0/16"},
            ],
        }
    ]
    expected = json.loads((FIXTURES / "arm" / "whatif_array_items.json").read_text())["properties"]["changes"][0]
    documented = next(d for d in expected["delta"] if d["path"] == "properties.addressSpace.addressPrefixes")
    assert documented.keys() == change["delta"][0].keys()
    assert [c.keys() for c in documented["children"]] == [c.keys() for c in change["delta"][0]["children"]]


def test_missing_parameter_is_invalid_template(arm: ArmStandIn, adapter: Arm) -> None:
    from azure.core.exceptions import HttpResponseError

    broken = VNET.model_copy(update={"parameters": {}})
    with pytest.raises(HttpResponseError) as caught:
        adapter.validate(broken, deployment_body(broken, {}, {}))
    assert caught.value.status_code == 400 and "cidr" in str(caught.value)


def test_cancel_after_success_is_409_and_group_delete_polls_location(arm: ArmStandIn, adapter: Arm) -> None:
    from azure.core.exceptions import HttpResponseError

    with pytest.raises(HttpResponseError) as caught:
        adapter.cancel(GROUP)
    assert caught.value.status_code == 409 and "DeploymentCannotBeCancelled" in str(caught.value)
    arm.world.group_delete_latency = 0.2
    adapter.delete_group("rg1")
    statuses = [r.status for r in arm.log if "operationresults" in r.path]
    assert statuses[-1] == 204 and 202 in statuses
    assert adapter.get_group("rg1") is None


def test_sdk_poller_follows_azure_async_operation_to_the_result(arm: ArmStandIn, adapter: Arm) -> None:
    arm.world.latency["microsoft.network/virtualnetworks"] = 0.2
    ops = adapter.clients.deployments.deployments
    result = ops.begin_create_or_update("rg1", "net", deployment_body(VNET, {}, {})).result()
    assert result["properties"]["provisioningState"] == "Succeeded"
    polled = [r for r in arm.log if "/operationStatuses/" in r.path]
    assert polled and all(r.status == 200 for r in polled)


def test_what_if_marks_resources_outside_the_template_ignore(arm: ArmStandIn, adapter: Arm) -> None:
    adapter.submit(VNET, deployment_body(VNET, {}, {}))
    finished(adapter, VNET)
    other = VNET.model_copy(update={"name": "net2", "parameters": {"cidr": "10.1.0.0/16", "n": "vnet2"}})
    kinds = sorted(c["changeType"] for c in adapter.what_if(other)["properties"]["changes"])
    assert kinds == ["Create", "Ignore"]


def test_unregistered_namespace_is_refused_like_arm(arm: ArmStandIn, adapter: Arm) -> None:
    from azure.core.exceptions import HttpResponseError

    arm.world.unregistered.add("microsoft.network")
    with pytest.raises(HttpResponseError) as caught:
        adapter.submit(VNET, deployment_body(VNET, {}, {}))
    assert caught.value.status_code == 409 and "MissingSubscriptionRegistration" in str(caught.value)
