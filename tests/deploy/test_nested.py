"""hpclz.deploy.nested on the deployment ID shapes of the Deployments REST paths (learn.microsoft.com/rest/api/
resources/deployments: .../resourcegroups/{rg}/providers/Microsoft.Resources/deployments/{name} (Get),
/subscriptions/{sub}/providers/... (Get At Subscription Scope), /providers/Microsoft.Management/managementGroups/
{groupId}/providers/... (List At Management Group Scope)) and the DeploymentOperation shape of Deployment
Operations - List (properties.targetResource: id, resourceName, resourceType)."""

from __future__ import annotations

from typing import Any

from hpclz.deploy.nested import NestedRun, handle, merged, nested_targets
from hpclz.render.model import Deployment, Scope

SUB = "/subscriptions/00000000-0000-0000-0000-000000000001"
PARENT = Deployment(
    name="outer", component="audit", scope=Scope.SUBSCRIPTION, location="eastus2", template={}, resource_group=None
)


def _op(rid: str, rtype: str, state: str = "Succeeded") -> dict[str, Any]:
    return {
        "id": f"{SUB}/providers/Microsoft.Resources/deployments/outer/operations/0A1B2C3D4E5F6071",
        "operationId": "0A1B2C3D4E5F6071",
        "properties": {
            "provisioningOperation": "Create",
            "provisioningState": state,
            "targetResource": {"id": rid, "resourceType": rtype, "resourceName": rid.rsplit("/", 1)[-1]},
        },
    }


def test_nested_targets_are_the_deployment_typed_targets_each_once() -> None:
    in_group = f"{SUB}/resourceGroups/NetworkWatcherRG/providers/Microsoft.Resources/deployments/lz-flowlog"
    ops = [
        _op(
            f"{SUB}/providers/Microsoft.Insights/diagnosticSettings/hpclz-audit",
            "Microsoft.Insights/diagnosticSettings",
        ),
        _op(in_group, "Microsoft.Resources/deployments", "Running"),
        _op(in_group, "Microsoft.Resources/deployments"),  # ARM lists a retried operation again
    ]
    assert nested_targets(ops) == [in_group]


def test_handle_reads_the_scope_from_the_id() -> None:
    group = handle(PARENT, f"{SUB}/resourceGroups/rg-net/providers/Microsoft.Resources/deployments/cc-network-roles")
    assert group is not None and (group.scope, group.resource_group, group.name) == (
        Scope.RESOURCE_GROUP,
        "rg-net",
        "cc-network-roles",
    )
    sub = handle(PARENT, f"{SUB}/providers/Microsoft.Resources/deployments/cc-subscription-roles")
    assert sub is not None and (sub.scope, sub.resource_group) == (Scope.SUBSCRIPTION, None)
    assert (
        handle(
            PARENT, "/providers/Microsoft.Management/managementGroups/mg1/providers/Microsoft.Resources/deployments/x"
        )
        is None
    )


def test_merged_adds_nested_output_resources_to_an_outer_run_that_lists_none() -> None:
    flow_log = f"{SUB}/resourceGroups/NetworkWatcherRG/providers/Microsoft.Network/networkWatchers/nw/flowLogs/fl"
    outer = {"properties": {"provisioningState": "Failed", "outputResources": None}}
    inner = handle(PARENT, f"{SUB}/resourceGroups/NetworkWatcherRG/providers/Microsoft.Resources/deployments/fl")
    assert inner is not None
    run = NestedRun(
        inner, {"properties": {"provisioningState": "Succeeded", "outputResources": [{"id": flow_log}]}}, []
    )
    assert merged(outer, [run])["properties"]["outputResources"] == [{"id": flow_log}]
    assert merged(outer, []) is outer
