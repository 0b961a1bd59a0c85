"""Per-component template context: derived values a template needs beyond the shared Zone."""

from __future__ import annotations

from typing import Any

from hpclz.render.nsg import security_rules
from hpclz.render.roles import assignments
from hpclz.render.zone import SubnetView, Zone


def network(zone: Zone) -> dict[str, Any]:
    def nsg_rules(view: SubnetView) -> list[dict[str, Any]]:
        return security_rules(view, zone.config.network.nsg_rules)

    return {"nsg_rules": nsg_rules, "assignments": assignments(zone, "network")}


def _secret_parameter(name: str) -> str:
    return "secret" + "".join(part[:1].upper() + part[1:] for part in name.split("-") if part)


def identity_secrets(zone: Zone) -> dict[str, str]:
    """secureString parameter -> config path of its secret (Deployment.secure_parameters)."""
    kv = zone.key_vault_new
    if kv is None:
        return {}
    return {_secret_parameter(name): f"identity.key_vault.secrets.{name}" for name in sorted(kv.secrets)}


def identity(zone: Zone) -> dict[str, Any]:
    return {"secrets": sorted(identity_secrets(zone).items()), "assignments": assignments(zone, "management")}
