"""Monitoring rules (MON) for what the nodes report: managed Prometheus, GPU health and the VMs' agent."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.config.base import Disabled
from hpclz.config.operations import ManagedPrometheus
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext


class PrometheusNeedsNodeIdentity(Rule[ConfigContext]):
    """The nodes' Prometheus signs its remote writes in with the nodes' managed identity, which holds Monitoring
    Metrics Publisher on the data collection rule (as in CCWS: Azure/cyclecloud-slurm-workspace@bc0fc1b:
    bicep/miMonitoringRoleAssignments.bicep). Without that identity nothing reaches the workspace and every alert
    on node metrics stays silent."""

    id = "HPCLZ-MON-006"
    severity = Severity.ERROR
    title = "Managed Prometheus without the nodes' managed identity"
    fix = "Set identity.managed_identities.compute: true, or monitoring.prometheus: {mode: disabled}."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        monitoring = ctx.config.monitoring
        if monitoring.mode != "new" or not isinstance(monitoring.prometheus, ManagedPrometheus):
            return
        if not ctx.config.identity.managed_identities.compute:
            yield self.finding(
                ctx, ("monitoring", "prometheus"), "the nodes have no managed identity to remote-write metrics with"
            )


class AgentWithoutRule(Rule[ConfigContext]):
    """The Azure Monitor agent collects only what a data collection rule associated with the VM names
    (learn.microsoft.com/azure/azure-monitor/agents/azure-monitor-agent-data-collection). hpclz renders that rule
    with monitoring.diagnostic_settings; without it the agent is left out, and syslog (sign-ins) is not collected."""

    id = "HPCLZ-MON-007"
    severity = Severity.WARNING
    title = "Azure Monitor agent requested without a data collection rule"
    fix = "Set monitoring.diagnostic_settings: true, or monitoring.agent: false to say the VMs are not monitored."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        monitoring = ctx.config.monitoring
        if isinstance(monitoring, Disabled) or not monitoring.agent or monitoring.diagnostic_settings:
            return
        yield self.finding(ctx, ("monitoring", "agent"), "no data collection rule is rendered, so no agent either")


class ProdGpuHealthUnwatched(Rule[ConfigContext]):
    """A GPU with an XID error or an uncorrectable ECC error keeps taking jobs that then fail or hang until someone
    looks; DCGM exports both (DCGM_FI_DEV_XID_ERRORS, DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, NVIDIA/dcgm-exporter
    default-counters.csv) and hpclz alerts on them through managed Prometheus, as CCWS's monitoring collects them."""

    id = "HPCLZ-MON-008"
    severity = Severity.WARNING
    title = "Production GPU partitions without GPU health metrics"
    fix = "Set monitoring.prometheus: {mode: new} (gpu_exporter and alerts default on)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if not ctx.is_prod:
            return
        monitoring = ctx.config.monitoring
        prometheus = monitoring.prometheus if monitoring.mode == "new" else None
        if isinstance(prometheus, ManagedPrometheus) and prometheus.gpu_exporter and prometheus.alerts:
            return
        for index, partition in enumerate(ctx.config.compute.partitions):
            sku = ctx.catalog.sku(partition.vm_size)
            if sku is not None and sku.is_gpu:
                yield self.finding(
                    ctx,
                    ("compute", "partitions", index, "vm_size"),
                    f"partition {partition.name} ({partition.vm_size}) has GPUs; no XID or ECC alert watches them",
                )


METRICS_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    PrometheusNeedsNodeIdentity,
    AgentWithoutRule,
    ProdGpuHealthUnwatched,
)
