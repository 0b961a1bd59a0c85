"""Per-component template context: derived values a template needs beyond the shared Zone."""

from __future__ import annotations

import json
from typing import Any

from hpclz.config.base import Disabled
from hpclz.config.operations import ExistingMonitoring
from hpclz.errors import ExitCode, HpclzError
from hpclz.render.arm import expr, literal, resource_id
from hpclz.render.cloudinit import accelerated, cluster_files, custom_data, server_cloud_config
from hpclz.render.nsg import security_rules
from hpclz.render.roles import assignments
from hpclz.render.zone import SubnetView, Zone


def network(zone: Zone) -> dict[str, Any]:
    def nsg_rules(view: SubnetView) -> list[dict[str, Any]]:
        return security_rules(view, zone.config.network.nsg_rules)

    return {"nsg_rules": nsg_rules, "assignments": assignments(zone, "network")}


def _secret_parameter(name: str) -> str:
    return "secret" + "".join(part[:1].upper() + part[1:] for part in name.split("-") if part)


def identity_secrets(zone: Zone) -> dict[str, str]:
    """secureString parameter -> config path of its secret (Deployment.secure_parameters)."""
    kv = zone.key_vault_new
    if kv is None:
        return {}
    return {_secret_parameter(name): f"identity.key_vault.secrets.{name}" for name in sorted(kv.secrets)}


def identity(zone: Zone) -> dict[str, Any]:
    return {"secrets": sorted(identity_secrets(zone).items()), "assignments": assignments(zone, "management")}


TIB = 1024**4
GIB = 1024**3


def _lifecycle_rules(zone: Zone) -> list[dict[str, Any]]:
    blob = zone.blob_new
    if blob is None:
        return []
    life = blob.lifecycle
    steps = {
        "tierToCool": life.cool_after_days,
        "tierToCold": life.cold_after_days,
        "tierToArchive": life.archive_after_days,
        "delete": life.delete_after_days,
    }
    base = {action: {"daysAfterModificationGreaterThan": days} for action, days in steps.items() if days}
    if not base:
        return []
    actions: dict[str, Any] = {"baseBlob": base}
    if life.delete_after_days:
        # Old versions and snapshots would otherwise outlive the blob they belong to.
        actions["version"] = {"delete": {"daysAfterCreationGreaterThan": life.delete_after_days}}
        actions["snapshot"] = {"delete": {"daysAfterCreationGreaterThan": life.delete_after_days}}
    rule = {"enabled": True, "name": "hpclz-lifecycle", "type": "Lifecycle"}
    rule["definition"] = {"actions": actions, "filters": {"blobTypes": ["blockBlob"]}}
    return [rule]


def _lustre(zone: Zone) -> dict[str, Any] | None:
    lustre = zone.lustre_new
    if lustre is None:
        return None
    hsm = None
    if lustre.hsm is not None:
        if zone.blob_new is None:
            raise HpclzError(
                "storage.lustre.hsm: the HSM container must live in the blob account hpclz creates "
                "(storage.blob.mode: new)",
                exit_code=ExitCode.CONFIG_INVALID,
            )
        hsm = {
            "container": lustre.hsm.container,
            "logging": lustre.hsm.container[:58] + "-logs",
            "import_prefix": lustre.hsm.import_prefix,
        }
    return {"name": zone.lustre_name, "spec": lustre, "hsm": hsm}


def _netapp(zone: Zone) -> dict[str, Any] | None:
    netapp = zone.netapp_new
    if netapp is None:
        return None
    clients = [v.cidr for v in zone.subnets if v.role in ("admin", "compute")]
    volumes = [
        {
            "name": zone.netapp_volume(v),
            "spec": v,
            "path": f"storage.netapp.volumes[{v.name}]",
            "bytes": v.quota_gib * GIB,
        }
        for v in netapp.volumes
    ]
    return {
        "account": zone.netapp_account,
        "pool": zone.netapp_pool,
        "spec": netapp,
        "pool_bytes": netapp.pool_size_tib * TIB,
        "clients": ",".join(clients),
        "volumes": volumes,
    }


def storage(zone: Zone) -> dict[str, Any]:
    lustre = _lustre(zone)
    containers = []
    if zone.blob_new:
        containers = [
            {"name": c.name, "purpose": c.purpose, "path": f"storage.blob.containers[{c.name}]"}
            for c in zone.blob_new.containers
        ]
        # CycleCloud's locker: where it stages the Slurm project for the nodes.
        containers.append({"name": "cyclecloud", "purpose": "general", "path": "compute.cyclecloud"})
    if lustre and lustre["hsm"]:
        containers.append({"name": lustre["hsm"]["logging"], "purpose": "general", "path": "storage.lustre.hsm"})
    return {
        "containers": containers,
        "lifecycle_rules": _lifecycle_rules(zone),
        "lustre": lustre,
        "netapp": _netapp(zone),
        "assignments": assignments(zone, "storage"),
    }


def compute(zone: Zone) -> dict[str, Any]:
    files = cluster_files(zone)
    cloud_config = server_cloud_config(zone, files)
    publisher, offer, sku, version = zone.config.compute.cyclecloud.image.split(":")
    has_identity = zone.config.identity.managed_identities.scheduler
    server = {
        "name": cyclecloud_vm(zone),
        "computer_name": f"{zone.config.metadata.name}-cyclecloud",
        "nic": zone.names.name("network_interface", "cc"),
        "accelerated": accelerated(zone, zone.config.compute.cyclecloud.vm_size),
        "identity": expr(zone.identity_id("scheduler")) if has_identity else None,
        "image": {"publisher": publisher, "offer": offer, "sku": sku, "version": version},
        "custom_data": custom_data(cloud_config),
    }
    artifacts = {f"cyclecloud/{name}": text for name, text in files.items()}
    artifacts["cloud-init/cyclecloud-server.yaml"] = cloud_config
    return {
        "server": server,
        "assignments": assignments(zone, "compute"),
        "artifacts": artifacts,
        "parameters": {"cycleCloudVmSize": zone.config.compute.cyclecloud.vm_size},
    }


def cyclecloud_vm(zone: Zone) -> str:
    return zone.names.name("virtual_machine", "cc")


def monitoring_enabled(zone: Zone) -> bool:
    return not isinstance(zone.config.monitoring, Disabled)


def monitoring(zone: Zone) -> dict[str, Any]:
    mon = zone.config.monitoring
    name = zone.names.name("log_analytics")
    if isinstance(mon, ExistingMonitoring):
        workspace = {"name": name, "id": mon.workspace_resource_id, "collect": mon.diagnostic_settings}
    else:
        wid = expr(f"resourceId('Microsoft.OperationalInsights/workspaces', {literal(name)})")
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
    vm = expr(resource_id("Microsoft.Compute/virtualMachines", cyclecloud_vm(zone), group=zone.rg["compute"]))
    items = [
        {
            "name": zone.names.name("metric_alert", "cc-cpu"),
            "path": "monitoring.alerts (compute.cyclecloud)",
            "description": "hpclz: the CycleCloud server's CPU stays above 90% (autoscaling slows down)",
            "severity": 2,
            "scope": vm,
            "namespace": "Microsoft.Compute/virtualMachines",
            "metric": "Percentage CPU",
            "operator": "GreaterThan",
            "threshold": 90,
            "aggregation": "Average",
        },
        {
            "name": zone.names.name("metric_alert", "cc-available"),
            "path": "monitoring.alerts (compute.cyclecloud)",
            "description": "hpclz: the CycleCloud server is unavailable (no node can start or stop)",
            "severity": 1,
            "scope": vm,
            "namespace": "Microsoft.Compute/virtualMachines",
            "metric": "VmAvailabilityMetric",
            "operator": "LessThan",
            "threshold": 1,
            "aggregation": "Average",
        },
    ]
    if zone.blob_new:
        account = resource_id("Microsoft.Storage/storageAccounts", zone.storage_account_name, group=zone.rg["storage"])
        items.append(
            {
                "name": zone.names.name("metric_alert", "st-available"),
                "path": "monitoring.alerts (storage.blob)",
                "description": "hpclz: checkpoint storage availability below 99% (checkpoints may fail)",
                "severity": 1,
                "scope": expr(account),
                "namespace": "Microsoft.Storage/storageAccounts",
                "metric": "Availability",
                "operator": "LessThan",
                "threshold": 99,
                "aggregation": "Average",
            }
        )
    for item in items:
        item["criteria"] = _criteria(item)
    group = resource_id("Microsoft.Insights/actionGroups", zone.names.name("action_group"))
    return {"alerts": items, "action_group_id": expr(group)}


def _criteria(alert: dict[str, Any]) -> str:
    criteria = {
        "odata.type": "Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria",
        "allOf": [
            {
                "criterionType": "StaticThresholdCriterion",
                "name": alert["metric"],
                "metricName": alert["metric"],
                "metricNamespace": alert["namespace"],
                "operator": alert["operator"],
                "threshold": alert["threshold"],
                "timeAggregation": alert["aggregation"],
            }
        ],
    }
    return expr(f"json({literal(json.dumps(criteria, sort_keys=True))})")


def maintenance_enabled(zone: Zone) -> bool:
    return zone.config.maintenance.window is not None


def maintenance(zone: Zone) -> dict[str, Any]:
    return {"mc_name": zone.names.name("maintenance_configuration"), "vm_name": cyclecloud_vm(zone)}
