"""Live rules on names: global names someone else holds, and a soft-deleted Key Vault keeping its name."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.live.context import FactsReported, LiveContext


class GlobalNameTaken(FactsReported):
    """Storage account and Key Vault names are unique across Azure: a name someone else holds fails the
    deployment mid-way (StorageAccountAlreadyTaken, VaultAlreadyExists). Preflight asks the provider's
    checkNameAvailability for each name the zone would create and does not own yet (Storage Accounts - Check Name
    Availability, azure-rest-api-specs Microsoft.Storage example StorageAccountCheckNameAvailability.json)."""

    id = "HPCLZ-STO-101"
    severity = Severity.ERROR
    title = "A storage account or Key Vault name the zone needs is taken"
    fix = "Set organization.naming.unique_suffix to another value (or change metadata.name)."
    path = ("organization", "naming", "unique_suffix")

    def facts(self, ctx: LiveContext) -> dict[str, str]:
        return ctx.names_taken

    def message(self, key: str, value: str) -> str:
        return f"{key}: {value}"


class SoftDeletedVaultHoldsName(Rule[LiveContext]):
    """A soft-deleted vault keeps its name until its retention ends, and with purge protection it cannot be purged
    before: creating a vault of that name fails (MicrosoftDocs/azure-security-docs@025b849:articles/key-vault/
    general/soft-delete-overview.md). A destroy then redeploy of the same landing zone meets exactly this."""

    id = "HPCLZ-IDN-101"
    severity = Severity.ERROR
    title = "A soft-deleted Key Vault holds the name the landing zone needs"
    fix = "Recover it (az keyvault recover), purge it if purge protection is off, or set organization.naming.unique_suffix."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        deleted = ctx.deleted_vault
        if not deleted:
            return
        properties = deleted.get("properties") or {}
        protected = bool(properties.get("purgeProtectionEnabled"))
        name = deleted.get("name")
        yield self.finding(
            ctx,
            ("identity", "key_vault"),
            f"vault {name} was deleted on {properties.get('deletionDate')} and holds its name until "
            f"{properties.get('scheduledPurgeDate')}"
            + (" (purge protection: it cannot be purged)" if protected else ""),
            fix=f"az keyvault recover --name {name}, or set organization.naming.unique_suffix to a new value"
            + ("" if protected else f", or az keyvault purge --name {name}"),
        )
