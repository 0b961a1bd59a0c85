"""Azure Backup: a Recovery Services vault in the management group, a daily Azure VM policy with
retention from `backup`, and the CycleCloud server VM as its protected item.

The protected item's name is Azure Backup's own naming of an Azure VM: fabric `Azure`, container
`iaasvmcontainer;iaasvmcontainerv2;<vm group>;<vm>`, item `vm;iaasvmcontainerv2;<vm group>;<vm>` (azure-rest-api-specs
RecoveryServicesBackup examples ProtectedItems_Get / ProtectedItems_Delete). The scheduler and login nodes are
CycleCloud's VMs, created after deploy under names hpclz does not choose; their state (/sched, home) is on the
shared NFS file system (storage.shared), not on their disks.
"""

from __future__ import annotations

from typing import Any

from hpclz.render.arm import expr, resource_id
from hpclz.render.zone import Zone

POLICY_NAME = "hpclz-daily-vm"
# Any date works: Azure Backup reads only the time of day of scheduleRunTimes and retentionTimes.
SCHEDULE_DATE = "2026-01-01"


def backup_enabled(zone: Zone) -> bool:
    return zone.config.backup.enabled


def vault_name(zone: Zone) -> str:
    return zone.names.name("recovery_services_vault")


def protected_item(zone: Zone) -> tuple[str, str]:
    """(container, item) names of the CycleCloud server in the vault."""
    group, vm = zone.rg["compute"], zone.names.cyclecloud_vm()
    return f"iaasvmcontainer;iaasvmcontainerv2;{group};{vm}", f"vm;iaasvmcontainerv2;{group};{vm}"


def backup(zone: Zone) -> dict[str, Any]:
    settings = zone.config.backup
    vault = vault_name(zone)
    container, item = protected_item(zone)
    return {
        "vault": vault,
        "settings": settings,
        "policy": POLICY_NAME,
        "policy_id": expr(resource_id("Microsoft.RecoveryServices/vaults/backupPolicies", vault, POLICY_NAME)),
        "run_time": f"{SCHEDULE_DATE}T{settings.time_utc}:00Z",
        "protected_item": f"{vault}/Azure/{container}/{item}",
        "vm_id": expr(
            resource_id("Microsoft.Compute/virtualMachines", zone.names.cyclecloud_vm(), group=zone.rg["compute"])
        ),
    }
