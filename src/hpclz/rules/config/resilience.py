"""Resilience and audit rules: VNet flow logs (MON-02x), patching and backups (MNT-02x).

Numbered from 20 so they stay clear of the MON/MNT rules in hpclz.rules.config.operations.
"""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.config.base import Disabled
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

MIN_PROD_FLOW_LOG_DAYS = 90


class TrafficAnalyticsWithoutWorkspace(Rule[ConfigContext]):
    """Traffic Analytics writes its processed flows to a Log Analytics workspace (learn.microsoft.com/azure/
    network-watcher/traffic-analytics); with monitoring disabled the zone has none, so hpclz renders the flow log
    without it and the flows stay raw JSON in the storage account."""

    id = "HPCLZ-MON-020"
    severity = Severity.WARNING
    title = "Traffic Analytics asked for without a Log Analytics workspace"
    fix = "Set monitoring.mode to new or existing, or network.flow_logs.traffic_analytics: false."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        flow_logs = ctx.config.network.flow_logs
        if flow_logs.enabled and flow_logs.traffic_analytics and isinstance(ctx.config.monitoring, Disabled):
            yield self.finding(
                ctx, ("network", "flow_logs", "traffic_analytics"), "monitoring is disabled: no workspace to write to"
            )


class ProdFlowLogRetention(Rule[ConfigContext]):
    """CIS Microsoft Azure Foundations Benchmark v5.0.0: "Ensure that virtual network flow log retention days is set
    to greater than or equal to 90". Flow records are the evidence of who reached what on the network."""

    id = "HPCLZ-MON-021"
    severity = Severity.WARNING
    title = "Production VNet flow logs kept under 90 days"
    fix = f"Raise network.flow_logs.retention_days to {MIN_PROD_FLOW_LOG_DAYS} or more."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        flow_logs = ctx.config.network.flow_logs
        if ctx.is_prod and flow_logs.enabled and flow_logs.retention_days < MIN_PROD_FLOW_LOG_DAYS:
            yield self.finding(
                ctx,
                ("network", "flow_logs", "retention_days"),
                f"flow records are kept {flow_logs.retention_days} days; production keeps at least "
                f"{MIN_PROD_FLOW_LOG_DAYS}",
            )


FLOW_LOG_RULES: tuple[type[Rule[ConfigContext]], ...] = (TrafficAnalyticsWithoutWorkspace, ProdFlowLogRetention)


class ProdWithoutBackup(Rule[ConfigContext]):
    """Azure's AI IaaS design recommendations: "Implement regular backups for key assets ... to enable quick
    restoration in case of failure" (learn.microsoft.com/azure/cloud-adoption-framework/scenarios/ai/infrastructure/
    well-architected, Reliability). The CycleCloud server holds the cluster's definitions and CycleCloud's database;
    only information, since a zone may choose to rebuild it from its config instead."""

    id = "HPCLZ-MNT-020"
    severity = Severity.INFO
    title = "Production landing zone without Azure Backup of the CycleCloud server"
    fix = "Set backup.enabled: true, or suppress HPCLZ-MNT-020 where the server is rebuilt from the config."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.is_prod and not ctx.config.backup.enabled:
            yield self.finding(ctx, ("backup",), "the CycleCloud server of this production zone has no backup")


BACKUP_RULES: tuple[type[Rule[ConfigContext]], ...] = (ProdWithoutBackup,)
