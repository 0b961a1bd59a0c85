"""How long hpclz follows a deployment: each resource type gets a time budget, and a deployment still
running past the longest budget of its types stops being followed (ARM carries on with it; rerun deploy
to re-attach). HPCLZ_DEPLOY_TIMEOUT (seconds) replaces the table for one run.
"""

from __future__ import annotations

from collections.abc import Iterable

# Budgets, generous on purpose: past them something is wrong, not slow. Managed Lustre and NetApp take
# the longest to provision; VMs with extensions and Bastion next (Bastion is documented as taking about
# 10 minutes: https://learn.microsoft.com/azure/bastion/quickstart-host-portal).
TIMEOUT_MINUTES: dict[str, float] = {
    "microsoft.storagecache/amlfilesystems": 120,
    "microsoft.netapp/netappaccounts/capacitypools/volumes": 60,
    "microsoft.network/bastionhosts": 45,
    "microsoft.compute/virtualmachines": 45,
    "microsoft.network/virtualnetworkgateways": 90,
}
DEFAULT_TIMEOUT_MINUTES = 30.0


def deployment_budget(types: Iterable[str], override_seconds: float | None = None) -> tuple[float, str]:
    """Seconds to follow a deployment, and the resource type that sets it."""
    if override_seconds is not None:
        return override_seconds, "HPCLZ_DEPLOY_TIMEOUT"
    budgets = {t: TIMEOUT_MINUTES.get(t.lower(), DEFAULT_TIMEOUT_MINUTES) for t in types} or {
        "": DEFAULT_TIMEOUT_MINUTES
    }
    slowest = max(budgets, key=lambda t: budgets[t])
    return budgets[slowest] * 60, slowest or "any resource"
