"""VNet flow logs: Network Watcher records the VNet's IP flows into a storage account of their
own, and Traffic Analytics processes them into the zone's Log Analytics workspace.

The flow log is a child of the region's Network Watcher, which Azure creates in NetworkWatcherRG and of which a
subscription holds one per region (learn.microsoft.com/azure/network-watcher/network-watcher-create): it goes in
through a nested deployment into that group, as the flow logs of Azure's own landing-zone templates do.
"""

from __future__ import annotations

from typing import Any

from hpclz.config.base import Disabled
from hpclz.config.operations import ExistingMonitoring
from hpclz.render.arm import API_VERSIONS, expr, resource_id
from hpclz.render.zone import Zone

# Flow log record format: VNet flow logs write JSON, version 2 being the one with bytes and packets
# (learn.microsoft.com/azure/network-watcher/vnet-flow-logs-overview, "Log format").
FORMAT_VERSION = 2


def flow_logs_enabled(zone: Zone) -> bool:
    return zone.config.network.flow_logs.enabled


def watcher(zone: Zone) -> tuple[str, str]:
    """(resource group, name) of the region's Network Watcher: NetworkWatcher_<region> in NetworkWatcherRG unless
    the config names another."""
    settings = zone.config.network.flow_logs.network_watcher
    return settings.resource_group, settings.name or f"NetworkWatcher_{zone.location}"


def flow_log_account(zone: Zone) -> str:
    return zone.names.name("storage_account", "flow")


def _analytics(zone: Zone) -> dict[str, Any] | None:
    settings = zone.config.network.flow_logs
    mon = zone.config.monitoring
    if not settings.traffic_analytics or isinstance(mon, Disabled):
        return None  # HPCLZ-MON-006 says Traffic Analytics needs a workspace
    if isinstance(mon, ExistingMonitoring):
        workspace = mon.workspace_resource_id
        body = f"'{workspace}'"
    else:
        body = resource_id(
            "Microsoft.OperationalInsights/workspaces", zone.names.name("log_analytics"), group=zone.rg["monitoring"]
        )
        workspace = expr(body)
    api = API_VERSIONS["Microsoft.OperationalInsights/workspaces"]
    return {
        "workspace_resource_id": workspace,
        # Traffic Analytics names the workspace by its GUID (customerId) and region as well as its ID.
        "workspace_guid": expr(f"reference({body}, '{api}').customerId"),
        "workspace_region": expr(f"reference({body}, '{api}', 'Full').location"),
        "interval": settings.traffic_analytics_interval_minutes,
    }


def flow_logs(zone: Zone) -> dict[str, Any]:
    group, name = watcher(zone)
    account = flow_log_account(zone)
    return {
        "account": account,
        "account_id": expr(resource_id("Microsoft.Storage/storageAccounts", account, group=zone.rg["monitoring"])),
        "watcher_group": group,
        "watcher": name,
        "flow_log": f"{name}/{zone.vnet_name}-flowlog",
        "target": zone.vnet_id,
        "analytics": _analytics(zone),
        "settings": zone.config.network.flow_logs,
        "format_version": FORMAT_VERSION,
    }
