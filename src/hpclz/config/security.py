"""Microsoft Defender for Cloud plans: opt-in, because they are set on the whole subscription.

Plan names and sub-plans are the Microsoft.Security/pricings names of the REST API and ARM reference
(learn.microsoft.com/azure/templates/microsoft.security/2024-01-01/pricings,
learn.microsoft.com/rest/api/defenderforcloud/pricings/update): VirtualMachines is Defender for Servers (sub-plans
P1 and P2), StorageAccounts is Defender for Storage, KeyVaults Defender for Key Vault, Arm Defender for Resource
Manager.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hpclz.config.base import StrictModel

DefenderPlan = Literal["VirtualMachines", "StorageAccounts", "KeyVaults", "Arm"]


class Defender(StrictModel):
    plans: list[DefenderPlan] = Field(
        default_factory=list,
        description=(
            "Defender for Cloud plans to turn on (Standard tier) for the WHOLE subscription, not only this landing "
            "zone: VirtualMachines (servers), StorageAccounts, KeyVaults, Arm. Empty: hpclz leaves Defender alone."
        ),
    )
    servers_sub_plan: Literal["P1", "P2"] = Field(
        default="P2",
        # Plan comparison: learn.microsoft.com/azure/defender-for-cloud/defender-for-servers-overview
        description="Defender for Servers plan: P2 adds agentless vulnerability scanning and file integrity monitoring.",
    )
    enforce: bool = Field(
        default=False,
        description="Forbid resource-level overrides of these plans below the subscription (pricings 'enforce').",
    )
