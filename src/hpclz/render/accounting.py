"""Slurm accounting's MySQL flexible server (compute.accounting mode new): the template context."""

from __future__ import annotations

from typing import Any

from hpclz.render.zone import Zone

# The secureString parameter that carries the administrator password into the accounting template.
PASSWORD_PARAMETER = "accountingAdminPassword"


def accounting_enabled(zone: Zone) -> bool:
    return zone.accounting_new is not None


def accounting_secrets(zone: Zone) -> dict[str, str]:
    """The administrator password: the config's identity.key_vault.secrets entry the accounting block names, which
    the identity deployment also stores in Key Vault for the CycleCloud server to read (HPCLZ-CMP-040)."""
    db = zone.accounting_new
    if db is None:
        return {}
    return {PASSWORD_PARAMETER: f"identity.key_vault.secrets.{db.password_secret_name}"}


def accounting(_zone: Zone) -> dict[str, Any]:
    # No role assignment of its own: slurmdbd signs in with the password, and readers get Reader on the storage group
    # from the storage deployment.
    return {"password_parameter": PASSWORD_PARAMETER, "assignments": []}
