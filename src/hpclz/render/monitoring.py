"""Monitoring and alerts template context: workspace, data collection, metric alerts on the key resources."""

from __future__ import annotations

import json
from typing import Any

from hpclz.config.base import Disabled
from hpclz.config.operations import ExistingMonitoring
from hpclz.render import prometheus
from hpclz.render.arm import expr, literal, resource_id_expr
from hpclz.render.dashboards import dashboards
from hpclz.render.roles import assignments, prometheus_assignments
from hpclz.render.zone import Zone


def monitoring_enabled(zone: Zone) -> bool:
    return not isinstance(zone.config.monitoring, Disabled)


def monitoring(zone: Zone) -> dict[str, Any]:
    mon = zone.config.monitoring
    name = zone.names.name("log_analytics")
    if isinstance(mon, ExistingMonitoring):
        workspace = {"name": name, "id": mon.workspace_resource_id, "collect": mon.diagnostic_settings}
    else:
        wid = resource_id_expr("Microsoft.OperationalInsights/workspaces", name)
        collect = bool(zone.monitoring_new and zone.monitoring_new.diagnostic_settings)
        workspace = {"name": name, "id": wid, "collect": collect}
    return {
        "workspace": workspace,
        "action_group": zone.names.name("action_group"),
        "prometheus": prometheus.resources(zone),
        "assignments": assignments(zone, "monitoring") + prometheus_assignments(zone, prometheus.ids(zone)),
        "artifacts": dashboards(zone),
    }


def vm_agent(zone: Zone) -> dict[str, Any] | None:
    """The Azure Monitor agent and its rule association on the VMs hpclz creates, or None. The agent signs in with
    the VM's user-assigned identity when it has one (settings.authentication.managedIdentity, identifier-name
    mi_res_id), else with the system-assigned one (learn.microsoft.com/azure/azure-monitor/agents/
    azure-monitor-agent-manage); the association points the VM at the rule, without which the agent collects
    nothing (learn.microsoft.com/azure/azure-monitor/agents/azure-monitor-agent-data-collection)."""
    mon = zone.config.monitoring
    if isinstance(mon, Disabled) or not mon.agent or not _collects(zone):
        return None
    rule = resource_id_expr(
        "Microsoft.Insights/dataCollectionRules",
        zone.names.name("data_collection_rule", "vm"),
        group=zone.rg["monitoring"],
    )
    scheduler = zone.config.identity.managed_identities.scheduler
    return {"rule_id": rule, "identity": expr(zone.identity_id("scheduler")) if scheduler else None}


def _collects(zone: Zone) -> bool:
    """The VM data collection rule is rendered (arm/monitoring: workspace.collect)."""
    mon = zone.config.monitoring
    if isinstance(mon, ExistingMonitoring):
        return mon.diagnostic_settings
    return bool(zone.monitoring_new and zone.monitoring_new.diagnostic_settings)


def alerts_enabled(zone: Zone) -> bool:
    return bool(zone.monitoring_new and zone.monitoring_new.alerts) or bool(prometheus.alert_groups(zone))


def alerts(zone: Zone) -> dict[str, Any]:
    group = resource_id_expr("Microsoft.Insights/actionGroups", zone.names.name("action_group"))
    metric = _metric_alerts(zone) if zone.monitoring_new and zone.monitoring_new.alerts else []
    return {"alerts": metric, "action_group_id": group, "rule_groups": prometheus.alert_groups(zone)}


def _metric_alerts(zone: Zone) -> list[dict[str, Any]]:
    vm = resource_id_expr("Microsoft.Compute/virtualMachines", zone.names.cyclecloud_vm(), group=zone.rg["compute"])
    items = [
        _alert(
            zone.names.name("metric_alert", "cc-cpu"),
            "compute.cyclecloud",
            "hpclz: the CycleCloud server's CPU stays above 90% (autoscaling slows down)",
            severity=2,
            scope=vm,
            namespace="Microsoft.Compute/virtualMachines",
            metric="Percentage CPU",
            operator="GreaterThan",
            threshold=90,
        ),
        _alert(
            zone.names.name("metric_alert", "cc-available"),
            "compute.cyclecloud",
            "hpclz: the CycleCloud server is unavailable (no node can start or stop)",
            severity=1,
            scope=vm,
            namespace="Microsoft.Compute/virtualMachines",
            metric="VmAvailabilityMetric",
            operator="LessThan",
            threshold=1,
        ),
    ]
    if zone.blob_new:
        items.append(
            _alert(
                zone.names.name("metric_alert", "st-available"),
                "storage.blob",
                "hpclz: checkpoint storage availability below 99% (checkpoints may fail)",
                severity=1,
                scope=resource_id_expr(
                    "Microsoft.Storage/storageAccounts", zone.storage_account_name, group=zone.rg["storage"]
                ),
                namespace="Microsoft.Storage/storageAccounts",
                metric="Availability",
                operator="LessThan",
                threshold=99,
            )
        )
    return items


def _alert(
    name: str,
    watches: str,
    description: str,
    *,
    severity: int,
    scope: str,
    namespace: str,
    metric: str,
    operator: str,
    threshold: int,
) -> dict[str, Any]:
    """One static-threshold metric alert on one resource; `watches` is the config section of that resource."""
    criteria = {
        "odata.type": "Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria",
        "allOf": [
            {
                "criterionType": "StaticThresholdCriterion",
                "name": metric,
                "metricName": metric,
                "metricNamespace": namespace,
                "operator": operator,
                "threshold": threshold,
                "timeAggregation": "Average",
            }
        ],
    }
    return {
        "name": name,
        "path": f"monitoring.alerts ({watches})",
        "description": description,
        "severity": severity,
        "scope": scope,
        "namespace": namespace,
        "criteria": expr(f"json({literal(json.dumps(criteria, sort_keys=True))})"),
    }
