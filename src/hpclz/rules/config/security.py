"""Security rules (SEC): Microsoft Defender for Cloud."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext


class ProdWithoutDefender(Rule[ConfigContext]):
    """Azure's AI IaaS design recommendations ask regulated teams to "conduct regular vulnerability scans. Use
    Microsoft Defender ... to assess VMs and resources" (learn.microsoft.com/azure/cloud-adoption-framework/
    scenarios/ai/infrastructure/well-architected). Only information: the plans change the whole subscription,
    which its owner may already manage outside this landing zone."""

    id = "HPCLZ-SEC-001"
    severity = Severity.INFO
    title = "Production landing zone without Defender for Cloud"
    fix = (
        "Set defender.plans: [VirtualMachines, StorageAccounts, KeyVaults, Arm] (they apply to the whole "
        "subscription), or suppress HPCLZ-SEC-001 where the subscription's owner already runs Defender."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.is_prod and not ctx.config.defender.plans:
            yield self.finding(ctx, ("defender",), "no Defender for Cloud plan scans this production zone's VMs")


class DefenderWithoutServers(Rule[ConfigContext]):
    """The cluster's attack surface is its VMs: Defender plans that leave out VirtualMachines (Defender for
    Servers) scan storage, Key Vault or ARM calls but not the nodes, the login VM or the CycleCloud server
    (learn.microsoft.com/azure/defender-for-cloud/defender-for-servers-overview)."""

    id = "HPCLZ-SEC-002"
    severity = Severity.WARNING
    title = "Defender plans without Defender for Servers"
    fix = "Add VirtualMachines to defender.plans."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        plans = ctx.config.defender.plans
        if plans and "VirtualMachines" not in plans:
            yield self.finding(
                ctx, ("defender", "plans"), f"plans {', '.join(plans)} leave the cluster's VMs unscanned"
            )


SECURITY_RULES: tuple[type[Rule[ConfigContext]], ...] = (ProdWithoutDefender, DefenderWithoutServers)
