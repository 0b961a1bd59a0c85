"""Nested deployments on the ARM stand-in, through the SDK: each is a deployment of its own at its own scope, which
the outer run's operations name only as a Microsoft.Resources/deployments target (Deployment Operations - List,
learn.microsoft.com/rest/api/resources/deploymentoperations/list). The runner follows them (hpclz.deploy.nested), so
what they made is recorded even when the outer run failed and has no outputResources. The kill -9 race with a
nested run in flight is in test_resume."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpclz.azure.arm import Arm
from hpclz.azure.clients import AzureClients
from hpclz.deploy.nested import handle, nested_targets
from hpclz.render.model import Deployment, Scope
from tests.conftest import RunCli
from tests.deploy.conftest import state_of
from tests.support.arm_standin import ArmStandIn, Fault

FLOWLOGS = "hpclz-aitrain-prod-flowlogs"
AUDIT = "hpclz-aitrain-prod-audit"
NESTED = "Microsoft.Resources/deployments"


def _outer(name: str, group: str | None) -> Deployment:
    scope = Scope.RESOURCE_GROUP if group else Scope.SUBSCRIPTION
    return Deployment(name=name, component="x", scope=scope, resource_group=group, location="eastus2", template={})


def _record(zone: Path, name: str) -> dict[str, Any]:
    record: dict[str, Any] = state_of(zone)["deployments"][name]
    return record


def test_a_nested_run_is_its_own_deployment_at_its_own_scope(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    client = Arm(AzureClients(arm.subscription_id))
    outer = _outer(FLOWLOGS, _record(zone, FLOWLOGS)["resource_group"])
    ops = client.operations(outer)
    targets = [
        (o["properties"]["targetResource"]["resourceType"], o["properties"]["targetResource"]["id"]) for o in ops
    ]
    # The outer run lists its storage account and the nested deployment into NetworkWatcherRG, not the flow log.
    assert [t for t, _ in targets] == ["Microsoft.Storage/storageAccounts", NESTED]
    [nested_id] = nested_targets(ops)
    assert "/resourceGroups/NetworkWatcherRG/providers/Microsoft.Resources/deployments/" in nested_id
    inner = handle(outer, nested_id)
    assert inner is not None and inner.scope is Scope.RESOURCE_GROUP and inner.resource_group == "NetworkWatcherRG"
    assert (client.get_deployment(inner) or {})["properties"]["provisioningState"] == "Succeeded"
    [flow_log] = [o["properties"]["targetResource"] for o in client.operations(inner)]
    assert flow_log["resourceType"] == "Microsoft.Network/networkWatchers/flowLogs"
    # A succeeded outer run's outputResources still include what its nested run made (bicep-reps pull 3).
    outputs = [o["id"].lower() for o in (client.get_deployment(outer) or {})["properties"]["outputResources"]]
    assert flow_log["id"].lower() in outputs

    # CycleCloud's roles: the compute deployment (a group's) nests one run into the network group and one at
    # subscription scope (subscriptionId and no resourceGroup), each readable at its own scope.
    compute = _outer("hpclz-aitrain-prod-compute", _record(zone, "hpclz-aitrain-prod-compute")["resource_group"])
    inner_runs = [handle(compute, rid) for rid in nested_targets(client.operations(compute))]
    by_scope = {(i.scope, i.resource_group): i for i in inner_runs if i is not None}
    subscription_run = by_scope[(Scope.SUBSCRIPTION, None)]
    assert (client.get_deployment(subscription_run) or {})["properties"]["provisioningState"] == "Succeeded"
    assigned = [o["properties"]["targetResource"]["id"] for o in client.operations(subscription_run)]
    assert assigned and all(i.lower().startswith(f"/subscriptions/{arm.subscription_id}/providers/") for i in assigned)
    recorded = {r["id"].lower() for r in state_of(zone)["resources"]}
    assert {i.lower() for i in assigned} <= recorded

    # The audit deployment runs at subscription scope and nests one run per watched resource's group.
    audit = _outer(AUDIT, None)
    handles = [handle(audit, rid) for rid in nested_targets(client.operations(audit))]
    groups = {h.resource_group for h in handles if h is not None}
    assert groups and None not in handles and None not in groups


def test_a_failed_deploy_records_what_its_nested_runs_made(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    """The audit run's last nested run fails (its saved searches): the outer run ends Failed, with no
    outputResources, and its own operations name only the nested deployments. The diagnostic settings the earlier
    nested runs made are recorded from those runs' operations, so destroy can find them."""
    arm.faults.add(
        Fault(
            "resource",
            path="Microsoft.OperationalInsights/workspaces/savedSearches",
            code="BadRequest",
            message="Saved search query is invalid",
        )
    )
    failed = run_cli("deploy", str(zone), "--yes")
    assert failed.exit_code == 5
    # The failure shown is the resource's inside the nested run, not the nested deployment's generic one.
    assert "BadRequest: Saved search query is invalid" in failed.stderr + failed.stdout
    assert _record(zone, AUDIT)["status"] == "failed"
    client = Arm(AzureClients(arm.subscription_id))
    assert (client.get_deployment(_outer(AUDIT, None)) or {})["properties"].get("outputResources") is None
    made = {
        k
        for k, r in arm.world.resources.items()
        if r["type"] == "Microsoft.Insights/diagnosticSettings" and "/resourcegroups/" in k
    }
    assert made  # the Key Vault's and the blob service's settings exist in Azure
    recorded = {r["id"].lower() for r in state_of(zone)["resources"] if r["deployment"] == AUDIT}
    assert made <= recorded, made - recorded
