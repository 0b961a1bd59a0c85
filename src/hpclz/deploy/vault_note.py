"""What destroy says when Azure refuses to delete a Recovery Services vault (backup: ...).

Azure refuses to delete a vault while it holds backup items; deleting a protected item stops its protection and
deletes its backups, which soft delete then keeps for the vault's retention period (14 days by default), still in
the vault (learn.microsoft.com/azure/backup/backup-azure-delete-vault, backup-azure-security-feature-cloud). So a
destroy --include-data deletes the protected item and the policy at once, and the vault, with its group, only
once the soft-deleted backups have expired.
"""

from __future__ import annotations

from hpclz.state.model import ResourceRecord

VAULT = "microsoft.recoveryservices/vaults"
PROTECTED_ITEM = "microsoft.recoveryservices/vaults/backupfabrics/protectioncontainers/protecteditems"
DEFAULT_SOFT_DELETE_DAYS = 14

VAULT_NOTE = (
    "Recovery Services vault {name} keeps the backups destroy deleted soft-deleted for {days} days, and Azure "
    "deletes no vault that holds them: run destroy --include-data again after that"
)


def _soft_delete_days(record: ResourceRecord) -> int:
    body = record.properties.get("properties", record.properties)
    settings = (body.get("securitySettings") or {}).get("softDeleteSettings") or {} if isinstance(body, dict) else {}
    days = settings.get("softDeleteRetentionPeriodInDays")
    return days if isinstance(days, int) else DEFAULT_SOFT_DELETE_DAYS


def vault_note(records: list[ResourceRecord]) -> str:
    vaults = [r for r in records if r.type.lower() == VAULT]
    if not vaults:
        return ""
    notes = [VAULT_NOTE.format(name=v.name, days=_soft_delete_days(v)) for v in vaults]
    return " (" + "; ".join(notes) + ")"


def protected_items(records: list[ResourceRecord]) -> list[ResourceRecord]:
    """Items to stop protecting before their vault's group can go: Azure deletes no group holding a vault with them."""
    return [r for r in records if r.type.lower() == PROTECTED_ITEM]
