"""Slurm accounting (compute.accounting): where its password comes from and who may read it."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.config.compute import ExistingAccounting
from hpclz.config.identity import NewKeyVault
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

ACCOUNTING = ("compute", "accounting")


class AccountingPasswordInVault(Rule[ConfigContext]):
    """slurmdbd's database password reaches the cluster only through Key Vault: hpclz stores
    identity.key_vault.secrets in the vault it creates, and the CycleCloud server reads the named secret when it
    imports the cluster. A name that is not among those secrets has no value to read, and the cluster import
    fails (Key Vault answers SecretNotFound,
    https://learn.microsoft.com/en-us/rest/api/keyvault/secrets/get-secret/get-secret)."""

    id = "HPCLZ-CMP-040"
    severity = Severity.ERROR
    title = "Accounting password secret is not stored by hpclz"
    fix = "Add the secret to identity.key_vault.secrets (mode: new), e.g. `slurmdb-password: ${env:SLURMDB_PASSWORD}`."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        accounting = ctx.config.compute.accounting
        if not isinstance(accounting, ExistingAccounting):
            return
        vault = ctx.config.identity.key_vault
        if not isinstance(vault, NewKeyVault):
            yield self.finding(
                ctx,
                (*ACCOUNTING, "password_secret"),
                f"the password is read from the Key Vault hpclz creates, but identity.key_vault.mode is {vault.mode}",
            )
        elif accounting.password_secret not in vault.secrets:
            yield self.finding(
                ctx,
                (*ACCOUNTING, "password_secret"),
                f"secret {accounting.password_secret!r} is not among identity.key_vault.secrets",
            )


class AccountingNeedsSchedulerIdentity(Rule[ConfigContext]):
    """The CycleCloud server runs as the scheduler managed identity; hpclz grants that identity Key Vault Secrets
    User so it can read the accounting password. Without the identity nothing can read it."""

    id = "HPCLZ-CMP-041"
    severity = Severity.ERROR
    title = "Accounting needs the scheduler managed identity"
    fix = "Set identity.managed_identities.scheduler: true, or turn compute.accounting off."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.config.compute.accounting.mode == "existing" and not ctx.config.identity.managed_identities.scheduler:
            yield self.finding(
                ctx,
                (*ACCOUNTING, "mode"),
                "identity.managed_identities.scheduler is false: no identity can read "
                "the accounting password from Key Vault",
            )


ACCOUNTING_RULES: tuple[type[Rule[ConfigContext]], ...] = (AccountingPasswordInVault, AccountingNeedsSchedulerIdentity)
