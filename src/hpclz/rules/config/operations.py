"""Operations rules: monitoring (MON), maintenance (MNT) and cost (COST)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from itertools import pairwise

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

MIN_PROD_RETENTION_DAYS = 90


class ProdMonitoring(Rule[ConfigContext]):
    """A production cluster without a Log Analytics workspace has no record of node failures or who did what
    (seed 002: monitor with Azure Monitor, audit access with Log Analytics)."""

    id = "HPCLZ-MON-001"
    severity = Severity.ERROR
    title = "Production landing zone without monitoring"
    fix = "Set monitoring.mode: new (or existing with workspace_resource_id)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.is_prod and ctx.config.monitoring.mode == "disabled":
            yield self.finding(ctx, ("monitoring",), "monitoring is disabled in a production landing zone")


class ProdLogRetention(Rule[ConfigContext]):
    """Incidents on training fleets are often investigated weeks later; 90 days of logs is the common audit floor."""

    id = "HPCLZ-MON-002"
    severity = Severity.WARNING
    title = "Production log retention under 90 days"
    fix = "Raise monitoring.retention_days to 90 or more, or archive logs elsewhere and suppress this rule."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        monitoring = ctx.config.monitoring
        if ctx.is_prod and monitoring.mode == "new" and monitoring.retention_days < MIN_PROD_RETENTION_DAYS:
            yield self.finding(
                ctx,
                ("monitoring", "retention_days"),
                f"logs are kept {monitoring.retention_days} days; production keeps at least {MIN_PROD_RETENTION_DAYS}",
            )


class ProdAlertRecipients(Rule[ConfigContext]):
    """Alerts that reach nobody are not alerts: a production action group needs at least one email."""

    id = "HPCLZ-MON-003"
    severity = Severity.WARNING
    title = "Production alerts have no email recipient"
    fix = "Add an address to monitoring.action_group.emails."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        monitoring = ctx.config.monitoring
        if ctx.is_prod and monitoring.mode == "new" and monitoring.alerts and not monitoring.action_group.emails:
            yield self.finding(ctx, ("monitoring", "action_group"), "the production action group has no email address")


class ProdDiagnostics(Rule[ConfigContext]):
    """Without diagnostic settings, resource logs (Key Vault access, storage, NSG) never reach the workspace."""

    id = "HPCLZ-MON-004"
    severity = Severity.WARNING
    title = "Production diagnostic settings disabled"
    fix = "Set monitoring.diagnostic_settings: true."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        monitoring = ctx.config.monitoring
        if ctx.is_prod and monitoring.mode != "disabled" and not monitoring.diagnostic_settings:
            yield self.finding(
                ctx, ("monitoring", "diagnostic_settings"), "resource logs are not sent to the workspace"
            )


class ProdMaintenanceWindow(Rule[ConfigContext]):
    """Without a window Azure applies host maintenance when it chooses, possibly mid-run (seed 004)."""

    id = "HPCLZ-MNT-001"
    severity = Severity.ERROR
    title = "Production landing zone without a maintenance window"
    fix = "Add maintenance.window with start, duration and recur_every."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.is_prod and ctx.config.maintenance.window is None:
            yield self.finding(ctx, ("maintenance",), "no maintenance window: Azure picks when hosts are updated")


def _minutes(duration: str) -> int:
    hours, _, minutes = duration.partition(":")
    return int(hours) * 60 + int(minutes)


class MaintenanceDuration(Rule[ConfigContext]):
    """Microsoft.Maintenance refuses windows shorter than the scope's minimum: Host 2 h, OS image 5 h,
    guest patching 1 h 30 min (and at most 3 h 55 min).
    Source: learn.microsoft.com/azure/virtual-machines/maintenance-configurations#scopes"""

    id = "HPCLZ-MNT-002"
    severity = Severity.ERROR
    title = "Maintenance window duration outside Azure's limits for its scope"
    fix = "Set maintenance.window.duration (hh:mm) within the scope's limits."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        maintenance = ctx.config.maintenance
        if maintenance.window is None:
            return
        facts = ctx.catalog.service("maintenance")
        length = _minutes(maintenance.window.duration)
        low = facts["min_minutes_by_scope"].get(maintenance.scope)
        high = facts["max_minutes_by_scope"].get(maintenance.scope)
        where = ("maintenance", "window", "duration")
        if low is not None and length < low:
            yield self.finding(
                ctx,
                where,
                f"{maintenance.window.duration} is shorter than the {low // 60}h{low % 60:02d} a {maintenance.scope} window needs",
            )
        if high is not None and length > high:
            yield self.finding(
                ctx,
                where,
                f"{maintenance.window.duration} is longer than the {high // 60}h{high % 60:02d} a {maintenance.scope} window allows",
            )


class MaintenanceStartValid(Rule[ConfigContext]):
    """The model checks the start's shape; the calendar decides whether the date exists (2026-02-30 does not)."""

    id = "HPCLZ-MNT-003"
    severity = Severity.ERROR
    title = "Maintenance window start is not a real date and time"
    fix = "Use 'YYYY-MM-DD hh:mm' with a date that exists."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        window = ctx.config.maintenance.window
        if window is None:
            return
        try:
            datetime.strptime(window.start, "%Y-%m-%d %H:%M")
        except ValueError as exc:
            yield self.finding(ctx, ("maintenance", "window", "start"), f"{window.start!r} is not a valid date: {exc}")


class ScheduledEventsDrain(Rule[ConfigContext]):
    """Scheduled Events give minutes of notice before a reboot, redeploy or eviction; draining the node then
    lets Slurm requeue the job instead of losing it (seed 004)."""

    id = "HPCLZ-MNT-004"
    severity = Severity.WARNING
    title = "Scheduled Events do not drain nodes before maintenance"
    fix = "Enable maintenance.scheduled_events and keep Reboot, Redeploy and Preempt in drain_on."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        events = ctx.config.maintenance.scheduled_events
        where = ("maintenance", "scheduled_events")
        spot = any(p.priority == "spot" for p in ctx.config.compute.partitions)
        if not events.enabled:
            if ctx.is_prod or spot:
                yield self.finding(
                    ctx, (*where, "enabled"), "Scheduled Events are off: nodes die mid-job at maintenance"
                )
            return
        missing = [e for e in ("Reboot", "Redeploy", *(["Preempt"] if spot else [])) if e not in events.drain_on]
        if missing:
            yield self.finding(ctx, (*where, "drain_on"), f"nodes are not drained on {', '.join(missing)}")


class IdleShutdownOutsideProd(Rule[ConfigContext]):
    """Dev and test clusters sit idle most of the time; idle nodes bill by the hour (seed 002 cost guidance)."""

    id = "HPCLZ-COST-001"
    severity = Severity.WARNING
    title = "Dev/test partition without idle shutdown"
    fix = "Set idle_shutdown_minutes (e.g. 15) on every dev/test partition."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.is_prod:
            return
        for i, partition, sku in ctx.partitions():
            # A rack-scale partition is never stopped when idle, whatever it sets (HPCLZ-CMP-073).
            if partition.idle_shutdown_minutes is None and not (sku and sku.nvlink_domain_vms):
                yield self.finding(
                    ctx, ("compute", "partitions", i), f"partition {partition.name} never stops idle nodes"
                )


class IdleTimesDiffer(Rule[ConfigContext]):
    """Slurm's SuspendTime is applied cluster-wide: cyclecloud-slurm 4.0.9 writes every PartitionName line itself
    with no SuspendTime= option (Azure/cyclecloud-slurm@50e6739:azure-slurm/slurmcc/cli.py l.862-864), so hpclz sets
    the global SuspendTime to the shortest partition idle time (hpclz.render.cloudinit.suspend_minutes) and every
    other partition's nodes stop after that too."""

    id = "HPCLZ-COST-005"
    severity = Severity.WARNING
    title = "Partitions ask for different idle times"
    fix = "Give every partition the same idle_shutdown_minutes: the shortest one applies to all of them."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        # Imported here, as in HPCLZ-CMP-019: hpclz.render.cloudinit loads hpclz.arm, which deploy and verify never
        # need before their config is read.
        from hpclz.render.cloudinit import suspend_minutes

        applied = suspend_minutes(ctx.config.compute.partitions)
        if applied is None:
            return
        for i, partition, sku in ctx.partitions():
            # A rack-scale partition is out of auto-suspend: its idle time is neither applied nor given another's.
            if partition.idle_shutdown_minutes != applied and not (sku and sku.nvlink_domain_vms):
                asked = (
                    f"asks for {partition.idle_shutdown_minutes} minutes"
                    if partition.idle_shutdown_minutes
                    else "sets no idle time"
                )
                yield self.finding(
                    ctx,
                    ("compute", "partitions", i, "idle_shutdown_minutes"),
                    f"partition {partition.name} {asked}, but its idle nodes stop after {applied} (Slurm's "
                    "SuspendTime is cluster-wide)",
                )


class ServiceNodesNotAccelerated(Rule[ConfigContext]):
    """The scheduler, login nodes and CycleCloud server run daemons and shells; a GPU or InfiniBand size there
    costs many times a general-purpose one and is rarely meant."""

    id = "HPCLZ-COST-002"
    severity = Severity.WARNING
    title = "Scheduler, login or CycleCloud on a GPU or InfiniBand size"
    fix = "Use a general-purpose size (Standard_D8as_v5, Standard_E8as_v5) for service nodes."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for role, size, _ in ctx.config.compute.service_vms():
            sku = ctx.catalog.sku(size)
            if sku is not None and (sku.is_gpu or sku.rdma):
                yield self.finding(ctx, ("compute", role, "vm_size"), f"{role} runs on {size}, a GPU/HPC size")


class SpotSettingsOnRegular(Rule[ConfigContext]):
    """spot_max_price only applies to spot nodes; on a regular partition it is ignored, so the cap you meant
    does not exist."""

    id = "HPCLZ-COST-003"
    severity = Severity.WARNING
    title = "Spot price cap on a regular partition"
    fix = "Set priority: spot, or remove spot_max_price."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, partition, _ in ctx.partitions():
            if partition.priority == "regular" and partition.spot_max_price != -1:
                yield self.finding(
                    ctx,
                    ("compute", "partitions", i, "spot_max_price"),
                    f"partition {partition.name} is regular priority; its spot_max_price is ignored",
                )


class LifecycleOrder(Rule[ConfigContext]):
    """Blob tiers get cheaper in the order cool, cold, archive; a later tier set earlier than an earlier one,
    or deletion before tiering, makes the cheaper steps dead rules."""

    id = "HPCLZ-COST-004"
    severity = Severity.WARNING
    title = "Blob lifecycle steps out of order"
    fix = "Order storage.blob.lifecycle days: cool < cold < archive < delete."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode != "new":
            return
        steps = [(key, days) for key, days in blob.lifecycle if days is not None]
        for (prev, before), (key, after) in pairwise(steps):
            if after <= before:
                yield self.finding(
                    ctx, ("storage", "blob", "lifecycle", key), f"{key} ({after}) is not after {prev} ({before})"
                )


class CheckpointReadsUnlogged(Rule[ConfigContext]):
    """Checkpoints are the model: without the blob service's StorageRead logs in the workspace nobody can answer
    "who read the checkpoints" (the audit deployment's saved search reads StorageBlobLogs, learn.microsoft.com/
    azure/storage/blobs/monitor-blob-storage-reference#resource-logs)."""

    id = "HPCLZ-MON-005"
    severity = Severity.WARNING
    title = "Checkpoint reads are not logged"
    fix = "Set monitoring.mode: new (or existing) with monitoring.diagnostic_settings: true."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode != "new" or not any(c.purpose == "checkpoints" for c in blob.containers):
            return
        monitoring = ctx.config.monitoring
        if monitoring.mode == "disabled" or not monitoring.diagnostic_settings:
            yield self.finding(ctx, ("monitoring",), "reads of the checkpoint containers reach no log")


MONITORING_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    ProdMonitoring,
    ProdLogRetention,
    ProdAlertRecipients,
    ProdDiagnostics,
    CheckpointReadsUnlogged,
)


class HostScopeOnOrdinaryVm(Rule[ConfigContext]):
    """A Host-scope maintenance configuration applies to isolated VMs, isolated scale sets and dedicated hosts
    only; an ordinary VM is patched in guest (InGuestPatch) and a scale set by OS image
    (learn.microsoft.com/azure/virtual-machines/maintenance-configurations, "Scopes"). hpclz assigns the
    configuration to the CycleCloud server, which is never on a dedicated host."""

    id = "HPCLZ-MNT-005"
    severity = Severity.ERROR
    title = "Host-scope maintenance configuration assigned to an ordinary VM"
    fix = "Set maintenance.scope: InGuestPatch (window 1h30 to 3h55) for the CycleCloud server."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        maintenance = ctx.config.maintenance
        if maintenance.window is not None and maintenance.scope == "Host":
            size = ctx.config.compute.cyclecloud.vm_size
            yield self.finding(
                ctx,
                ("maintenance", "scope"),
                f"scope Host is for isolated sizes and dedicated hosts; the CycleCloud server ({size}) is neither",
            )


MAINTENANCE_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    ProdMaintenanceWindow,
    MaintenanceDuration,
    MaintenanceStartValid,
    ScheduledEventsDrain,
    HostScopeOnOrdinaryVm,
)
BUDGET_WARN_SHARE = 0.8


class EstimateNearBudget(Rule[ConfigContext]):
    """A landing zone whose own estimate already takes most of its budget will overrun it in a busy month:
    the estimate counts only what it can price (retail list prices, partitions at budget.partition_hours),
    so the real bill is higher still. Above 100 % `hpclz deploy` refuses unless given --over-budget."""

    id = "HPCLZ-COST-010"
    severity = Severity.WARNING
    title = "Estimated monthly cost above 80 % of the budget"
    fix = (
        "Lower max_nodes or budget.partition_hours, choose smaller or spot sizes, or raise budget.monthly_usd; "
        "run `hpclz plan` to see the lines."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        budget = ctx.config.budget
        if budget is None:
            return
        from hpclz.cost.estimate import estimate  # its price models load only for a config with a budget

        est = estimate(ctx.config)
        share = est.total_usd / budget.monthly_usd
        if share <= BUDGET_WARN_SHARE:
            return
        bound = "at least " if est.unpriced else ""
        over = "; deploy refuses without --over-budget" if share > 1 else ""
        yield self.finding(
            ctx,
            ("budget", "monthly_usd"),
            f"estimated {bound}${est.total_usd:,.0f}/month is {share:.0%} of the ${budget.monthly_usd:,.0f} budget{over}",
        )


COST_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    IdleShutdownOutsideProd,
    IdleTimesDiffer,
    ServiceNodesNotAccelerated,
    SpotSettingsOnRegular,
    LifecycleOrder,
    EstimateNearBudget,
)
