"""Protection of the shared home and /sched (backup.shared): MNT-03x.

The cluster's Slurm configuration (slurm.conf, munge.key, azure.conf under /sched/<cluster>/) and users' homes live
on storage.shared, not on any VM disk hpclz backs up, so a zone that backs up its CycleCloud server but not these restores a server whose
cluster has lost its state.
"""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.config.backup import NETAPP_MAX_SNAPSHOTS
from hpclz.config.storage import AzureFilesShared, NetAppShared
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

SHARED = ("backup", "shared")


class ServerBackedUpSharedNot(Rule[ConfigContext]):
    """Azure's AI IaaS recommendations ask to back up key assets (learn.microsoft.com/azure/cloud-adoption-framework/
    scenarios/ai/infrastructure/well-architected, Reliability). cyclecloud-slurm keeps the cluster's slurm.conf and
    munge key in /sched/<cluster>/ (Azure/cyclecloud-slurm@b26ab06:slurm/install/install.py, `config_dir`), which
    every node links into /etc/slurm: the server's backup alone does not bring them back."""

    id = "HPCLZ-MNT-030"
    severity = Severity.WARNING
    title = "CycleCloud server backed up, shared home and /sched not protected"
    fix = "Set backup.shared.enabled: true."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        backup = ctx.config.backup
        managed = isinstance(ctx.config.storage.shared, AzureFilesShared | NetAppShared)
        if backup.enabled and managed and not backup.shared.enabled:
            yield self.finding(ctx, (*SHARED, "enabled"), "home and /sched on storage.shared have no protection")


class NfsShareNotBackedUp(Rule[ConfigContext]):
    """Azure Backup does not back up NFS Azure file shares ("Azure Backup currently doesn't support file shares with
    the NFS protocol": learn.microsoft.com/azure/backup/azure-file-share-support-matrix, ms.date 02/17/2026; the
    feature table of learn.microsoft.com/azure/storage/files/files-nfs-protocol lists backups as unsupported, soft
    delete and snapshots as supported), and ARM has no schedule for share snapshots. What hpclz can turn on is share
    soft delete: a deleted share comes back whole, a deleted or overwritten file does not. Information, so the
    reviewer knows; storage.shared.mode netapp gets scheduled snapshots."""

    id = "HPCLZ-MNT-031"
    severity = Severity.INFO
    title = "Shared home and /sched on Azure Files NFS: soft delete only, no backup"
    fix = "Accept it (files deleted on the share are not recoverable), or use storage.shared.mode: netapp."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.config.backup.shared.enabled and isinstance(ctx.config.storage.shared, AzureFilesShared):
            yield self.finding(
                ctx,
                ("storage", "shared", "mode"),
                "Azure Backup does not support NFS shares; hpclz turns on share soft delete "
                f"({ctx.config.backup.shared.soft_delete_days} days), which restores deleted shares, not files",
            )


class NetAppSnapshotCount(Rule[ConfigContext]):
    """An Azure NetApp Files volume holds at most 255 snapshots, a limit support cannot raise
    (learn.microsoft.com/azure/azure-netapp-files/azure-netapp-files-resource-limits), and Azure refuses a policy
    whose hourly, daily, weekly and monthly counts add up to more: "Total number of snapshots to keep exceeds 255"
    (learn.microsoft.com/azure/azure-netapp-files/troubleshoot-snapshot-policies). A policy keeping none takes no
    snapshot at all."""

    id = "HPCLZ-MNT-032"
    severity = Severity.ERROR
    title = "NetApp snapshot policy keeps no snapshot, or more than a volume can hold"
    fix = f"Keep between 1 and {NETAPP_MAX_SNAPSHOTS} snapshots in all of backup.shared's *_snapshots together."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        shared = ctx.config.backup.shared
        if not shared.enabled or not isinstance(ctx.config.storage.shared, NetAppShared):
            return
        kept = shared.snapshots_kept
        if kept == 0:
            yield self.finding(ctx, SHARED, "every *_snapshots count is 0: the policy would take no snapshot")
        elif kept > NETAPP_MAX_SNAPSHOTS:
            yield self.finding(ctx, SHARED, f"the policy keeps {kept} snapshots per volume; a volume holds at most 255")


class SharedBackupNothingToProtect(Rule[ConfigContext]):
    """backup.shared protects only what hpclz creates (Azure Files shares or NetApp volumes); an existing NFS server
    is its owner's to back up."""

    id = "HPCLZ-MNT-033"
    severity = Severity.WARNING
    title = "backup.shared enabled but storage.shared is not created by hpclz"
    fix = "Back up the existing NFS server where it is managed, and set backup.shared.enabled: false."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        shared = ctx.config.storage.shared
        if ctx.config.backup.shared.enabled and not isinstance(shared, AzureFilesShared | NetAppShared):
            yield self.finding(ctx, (*SHARED, "enabled"), f"storage.shared is {shared.mode}: nothing is protected")


SHARED_BACKUP_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    ServerBackedUpSharedNot,
    NfsShareNotBackedUp,
    NetAppSnapshotCount,
    SharedBackupNothingToProtect,
)
