"""Azure Backup of the CycleCloud server (a Recovery Services vault, a daily VM policy and the protected VM), and the
protection of the shared home and /sched (`shared`).

Limits from Azure Backup's support matrix for Azure VMs (learn.microsoft.com/azure/backup/backup-support-matrix-iaas,
"Backup policy"): daily recovery points kept 7 to 9999 days, weekly ones up to 5163 weeks, snapshots for instant
restore 1 to 5 days with the standard policy; a schedule runs on the hour or half hour. Soft delete keeps deleted
backup data 14 to 180 days (learn.microsoft.com/azure/backup/backup-azure-enhanced-soft-delete-about).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from hpclz.config.base import StrictModel, policy
from hpclz.config.constraints import Integer

# "Number of snapshots per volume: 255, not adjustable" (learn.microsoft.com/azure/azure-netapp-files/
# azure-netapp-files-resource-limits, ms.date 06/10/2025); HPCLZ-MNT-022 checks the policy's counts together.
NETAPP_MAX_SNAPSHOTS = 255


def _snapshot_count(default: int, description: str) -> Any:
    """How many of one kind of NetApp snapshot the policy keeps: 0 up to what a volume holds, changed in place."""
    return Field(
        default=default,
        ge=0,
        le=NETAPP_MAX_SNAPSHOTS,
        description=description,
        json_schema_extra=policy("in_place"),
    )


class SharedBackup(StrictModel):
    """What protects storage.shared (users' homes, the scheduler's /sched), by where it lives.

    Azure Files NFS shares: Azure Backup does not back them up ("Azure Backup currently doesn't support file shares
    with the NFS protocol": learn.microsoft.com/azure/backup/azure-file-share-support-matrix; files-nfs-protocol's
    feature table: backups no, soft delete yes, snapshots yes), and ARM has no schedule for share snapshots, so
    hpclz turns on share soft delete, which brings a deleted share back whole but not a deleted or overwritten file.
    Azure NetApp Files volumes: a snapshot policy in the NetApp account takes scheduled snapshots of both volumes.
    """

    enabled: bool = Field(
        default=False,
        description="Protect the shared home and /sched: share soft delete on Azure Files, a snapshot policy on NetApp.",
    )
    soft_delete_days: Integer = Field(
        default=14,
        ge=1,
        le=365,
        description="Azure Files: days a deleted share stays recoverable (1-365).",
        json_schema_extra=policy("in_place"),
    )
    hourly_snapshots: Integer = _snapshot_count(0, "NetApp: hourly snapshots kept (0: none).")
    daily_snapshots: Integer = _snapshot_count(7, "NetApp: daily snapshots kept, taken at backup.time_utc.")
    weekly_snapshots: Integer = _snapshot_count(4, "NetApp: Sunday's snapshots kept.")
    monthly_snapshots: Integer = _snapshot_count(0, "NetApp: first-of-the-month snapshots kept.")

    @property
    def snapshots_kept(self) -> int:
        return self.hourly_snapshots + self.daily_snapshots + self.weekly_snapshots + self.monthly_snapshots


class Backup(StrictModel):
    enabled: bool = Field(default=False, description="Back up the CycleCloud server VM (OS and data disks) daily.")
    time_utc: str = Field(
        default="01:00", pattern=r"^([01]\d|2[0-3]):(00|30)$", description="Daily backup start, UTC, on :00 or :30."
    )
    daily_retention_days: Integer = Field(default=30, ge=7, le=9999)
    weekly_retention_weeks: Integer = Field(
        default=12, ge=0, le=5163, description="Weekly points kept (Sunday's); 0: none."
    )
    instant_restore_days: Integer = Field(default=2, ge=1, le=5, description="Days snapshots stay for fast restore.")
    soft_delete_days: Integer = Field(
        default=14, ge=14, le=180, description="Days deleted backup data stays recoverable (soft delete, always on)."
    )
    # A vault's storage redundancy cannot change once it holds a backup item (configure before protecting).
    storage_redundancy: Literal["ZoneRedundant", "LocallyRedundant", "GeoRedundant"] = Field(
        default="ZoneRedundant", json_schema_extra=policy("not_allowed")
    )
    shared: SharedBackup = Field(default_factory=SharedBackup)
