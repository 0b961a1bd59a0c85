"""Azure Backup of the CycleCloud server: a Recovery Services vault, a daily VM policy and the protected VM.

Limits from Azure Backup's support matrix for Azure VMs (learn.microsoft.com/azure/backup/backup-support-matrix-iaas,
"Backup policy"): daily recovery points kept 7 to 9999 days, weekly ones up to 5163 weeks, snapshots for instant
restore 1 to 5 days with the standard policy; a schedule runs on the hour or half hour. Soft delete keeps deleted
backup data 14 to 180 days (learn.microsoft.com/azure/backup/backup-azure-enhanced-soft-delete-about).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hpclz.config.base import StrictModel, policy
from hpclz.config.constraints import Integer


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
