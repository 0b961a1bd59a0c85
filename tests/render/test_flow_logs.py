"""VNet flow logs as render writes them: a storage account of their own in the monitoring group,
and the flow log under the region's Network Watcher through a nested deployment into NetworkWatcherRG."""

from __future__ import annotations

from typing import Any

from hpclz.render.model import Deployment, DeploymentPlan
from tests.arm.test_schema_gate import schema_findings
from tests.render.conftest import preset_plan, variant

FLOW_LOG = "Microsoft.Network/networkWatchers/flowLogs"


def _flowlogs(plan: DeploymentPlan) -> Deployment | None:
    found = [d for d in plan.deployments if d.component == "flowlogs"]
    return found[0] if found else None


def _flow_log(deployment: Deployment) -> dict[str, Any]:
    [nested] = [r for r in deployment.template["resources"] if r["type"] == "Microsoft.Resources/deployments"]
    log: dict[str, Any]
    [log] = nested["properties"]["template"]["resources"]
    assert log["type"] == FLOW_LOG
    return log


def test_ai_training_logs_its_vnet_into_its_own_account_with_traffic_analytics() -> None:
    deployment = _flowlogs(preset_plan("ai-training"))
    assert deployment is not None and deployment.resource_group == "rg-aitrain-monitoring-prod-eus2"
    assert deployment.depends_on == [
        "hpclz-aitrain-prod-organization",
        "hpclz-aitrain-prod-network",
        "hpclz-aitrain-prod-monitoring",
    ]
    [account] = [r for r in deployment.template["resources"] if r["type"] == "Microsoft.Storage/storageAccounts"]
    props = account["properties"]
    # Network Watcher writes with the account key and comes in as a trusted Azure service.
    assert props["allowSharedKeyAccess"] is True and account["sku"]["name"].startswith("Standard_")
    assert props["networkAcls"]["defaultAction"] == "Deny" and props["networkAcls"]["bypass"] == "AzureServices"
    [nested] = [r for r in deployment.template["resources"] if r["type"] == "Microsoft.Resources/deployments"]
    assert nested["resourceGroup"] == "NetworkWatcherRG"
    log = _flow_log(deployment)
    assert log["name"] == "NetworkWatcher_eastus2/vnet-aitrain-prod-eus2-flowlog"
    assert "virtualNetworks', 'vnet-aitrain-prod-eus2')]" in log["properties"]["targetResourceId"]
    assert log["properties"]["retentionPolicy"] == {"days": 90, "enabled": True}
    assert log["properties"]["format"] == {"type": "JSON", "version": 2}
    analytics = log["properties"]["flowAnalyticsConfiguration"]["networkWatcherFlowAnalyticsConfiguration"]
    assert analytics["trafficAnalyticsInterval"] == 10 and ".customerId]" in analytics["workspaceId"]


def test_flow_logs_are_opt_in() -> None:
    assert _flowlogs(preset_plan("energy")) is None and _flowlogs(preset_plan("manufacturing")) is None


def test_an_existing_workspace_and_a_named_watcher_are_used_as_given() -> None:
    workspace = (
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-logs/providers/"
        "Microsoft.OperationalInsights/workspaces/law-central"
    )

    def edit(doc: dict[str, Any]) -> None:
        doc["monitoring"] = {"mode": "existing", "workspace_resource_id": workspace}
        doc["network"]["flow_logs"] = {
            "enabled": True,
            "network_watcher": {"resource_group": "rg-netwatch", "name": "nw-eastus2"},
        }

    deployment = _flowlogs(variant("ai-training", edit))
    assert deployment is not None
    log = _flow_log(deployment)
    assert log["name"].startswith("nw-eastus2/")
    analytics = log["properties"]["flowAnalyticsConfiguration"]["networkWatcherFlowAnalyticsConfiguration"]
    assert analytics["workspaceResourceId"] == workspace
    [nested] = [r for r in deployment.template["resources"] if r["type"] == "Microsoft.Resources/deployments"]
    assert nested["resourceGroup"] == "rg-netwatch"


def test_without_a_workspace_the_flow_log_has_no_traffic_analytics() -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["monitoring"] = {"mode": "disabled"}

    deployment = _flowlogs(variant("ai-training", edit))
    assert deployment is not None
    assert "flowAnalyticsConfiguration" not in _flow_log(deployment)["properties"]


def test_the_flow_log_template_passes_the_official_schemas() -> None:
    deployment = _flowlogs(preset_plan("finance"))
    assert deployment is not None
    assert schema_findings(deployment.template) == []
    assert schema_findings({**deployment.template, "resources": [_flow_log(deployment)]}) == []
