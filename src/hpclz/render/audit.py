"""Access and audit logs: diagnostic settings that send the subscription's activity log, Key
Vault's audit events and the blob service's reads, writes and deletes to the landing zone's Log Analytics workspace.

Retention is the workspace's (monitoring.retention_days): a diagnostic setting's own retentionPolicy applies to
storage-account destinations only and is deprecated (learn.microsoft.com/azure/azure-monitor/essentials/
migrate-to-azure-storage-lifecycle-policy).
"""

from __future__ import annotations

from typing import Any

from hpclz.config.base import Disabled
from hpclz.config.operations import ExistingMonitoring
from hpclz.render.arm import expr, resource_id, resource_path
from hpclz.render.zone import Zone

# Activity log categories (learn.microsoft.com/azure/azure-monitor/essentials/activity-log-schema#categories).
ACTIVITY_CATEGORIES = (
    "Administrative",
    "Security",
    "ServiceHealth",
    "Alert",
    "Recommendation",
    "Policy",
    "Autoscale",
    "ResourceHealth",
)
# Key Vault resource log category (learn.microsoft.com/azure/key-vault/general/logging).
KEY_VAULT_CATEGORIES = ("AuditEvent",)
# Blob service resource logs, table StorageBlobLogs
# (learn.microsoft.com/azure/storage/blobs/monitor-blob-storage-reference#resource-logs).
BLOB_CATEGORIES = ("StorageRead", "StorageWrite", "StorageDelete")


# "Who read the checkpoints": blob reads in StorageBlobLogs, whose ObjectKey is /<account>/<container>/<blob> and
# whose Requester* columns name the caller (learn.microsoft.com/azure/azure-monitor/reference/tables/storagebloblogs).
READS_QUERY = (
    "StorageBlobLogs\n"
    "| where OperationName == 'GetBlob' and AccountName == '{account}'\n"
    "| extend Container = tostring(split(ObjectKey, '/')[2])\n"
    "| where Container in ({containers})\n"
    "| project TimeGenerated, Container, ObjectKey, RequesterUpn, RequesterObjectId, RequesterAppId, "
    "AuthenticationType, CallerIpAddress, StatusCode\n"
    "| order by TimeGenerated desc"
)
# "Who signed in to the cluster": Entra ID SigninLogs are a tenant log a landing zone cannot route (tenant
# diagnostic settings need a tenant admin, learn.microsoft.com/entra/identity/monitoring-health/howto-integrate-
# activity-logs-with-azure-monitor-logs). What the zone sees is sshd on its own VMs, in the Syslog table through
# the data collection rule (auth/authpriv facilities, learn.microsoft.com/azure/azure-monitor/reference/tables/
# syslog); Entra SSH logins (the AADSSHLoginForLinux extension) go through the same sshd. OpenSSH logs a login
# as "%s %s%s%s for %s%.100s from %.200s port %d ssh2%s%s" (openssh-portable auth.c auth_log(): "Accepted
# publickey for ..."); from OpenSSH 9.8 the per-session process that writes it is sshd-session, not sshd.
SIGNIN_QUERY = (
    "Syslog\n"
    "| where Facility in ('auth', 'authpriv') and ProcessName in ('sshd', 'sshd-session')\n"
    "| where SyslogMessage startswith 'Accepted '\n"
    "| parse SyslogMessage with 'Accepted ' Method ' for ' User ' from ' Address ' port ' Port ' ' *\n"
    "| project TimeGenerated, Computer, User, Address, Method\n"
    "| order by TimeGenerated desc"
)


def saved_searches(zone: Zone) -> list[dict[str, str]]:
    searches = [
        {"name": "hpclz-cluster-signins", "display": "Who signed in to the cluster (sshd)", "query": SIGNIN_QUERY}
    ]
    blob = zone.blob_new
    checkpoints = [c.name for c in blob.containers if c.purpose == "checkpoints"] if blob else []
    if checkpoints:
        containers = ", ".join(f"'{name}'" for name in checkpoints)
        query = READS_QUERY.format(account=zone.storage_account_name, containers=containers)
        searches.append({"name": "hpclz-checkpoint-reads", "display": "Who read the checkpoints", "query": query})
    return searches


def audit_enabled(zone: Zone) -> bool:
    mon = zone.config.monitoring
    return not isinstance(mon, Disabled) and mon.diagnostic_settings


def _workspace_id(zone: Zone) -> str:
    mon = zone.config.monitoring
    if isinstance(mon, ExistingMonitoring):
        return mon.workspace_resource_id
    name = zone.names.name("log_analytics")
    return expr(resource_id("Microsoft.OperationalInsights/workspaces", name, group=zone.rg["monitoring"]))


def audit(zone: Zone) -> dict[str, Any]:
    targets = []
    if zone.key_vault_new is not None:
        targets.append(
            {
                "group": zone.rg["management"],
                "deployment": "keyvault",
                "scope": resource_path("Microsoft.KeyVault/vaults", zone.key_vault_name),
                "path": "identity.key_vault",
                "categories": KEY_VAULT_CATEGORIES,
            }
        )
    if zone.blob_new is not None:
        account = zone.storage_account_name
        targets.append(
            {
                "group": zone.rg["storage"],
                "deployment": "blob",
                "scope": resource_path("Microsoft.Storage/storageAccounts/blobServices", account, "default"),
                "path": "storage.blob",
                "categories": BLOB_CATEGORIES,
            }
        )
    return {
        "setting": "hpclz-audit",
        "workspace_id": _workspace_id(zone),
        "activity_categories": ACTIVITY_CATEGORIES,
        "targets": targets,
        # A workspace the zone does not own (monitoring.mode: existing) gets no saved searches from hpclz.
        "searches": saved_searches(zone) if zone.monitoring_new else [],
        "monitoring_group": zone.rg["monitoring"],
        "workspace_name": zone.names.name("log_analytics"),
    }
