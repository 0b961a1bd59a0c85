"""Monitoring and alerts template context: workspace, data collection, metric alerts on the key resources."""

from __future__ import annotations

import json
from typing import Any

from hpclz.config.base import Disabled
from hpclz.config.operations import ExistingMonitoring
from hpclz.render.arm import expr, literal, resource_id_expr
from hpclz.render.roles import assignments
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
        "assignments": assignments(zone, "monitoring"),
    }


def alerts_enabled(zone: Zone) -> bool:
    return bool(zone.monitoring_new and zone.monitoring_new.alerts)


def alerts(zone: Zone) -> dict[str, Any]:
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
    group = resource_id_expr("Microsoft.Insights/actionGroups", zone.names.name("action_group"))
    return {"alerts": items, "action_group_id": group}


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
