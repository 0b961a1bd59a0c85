"""Lint rules for monitoring that collects: a data collection rule does nothing for a VM until the Azure Monitor
agent runs on it and an association points the VM at the rule."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext

VM = "microsoft.compute/virtualmachines"
EXTENSION = "microsoft.compute/virtualmachines/extensions"
ASSOCIATION = "microsoft.insights/datacollectionruleassociations"


def _props(resource: dict[str, Any]) -> dict[str, Any]:
    properties = resource.get("properties")
    return properties if isinstance(properties, dict) else {}


class VmMonitored(Rule[TemplateContext]):
    """A VM sends nothing to Log Analytics without the Azure Monitor agent and a data collection rule association
    (learn.microsoft.com/azure/azure-monitor/agents/azure-monitor-agent-data-collection: "associate the DCR with
    the machines"); hpclz once rendered a rule and no association, so the sign-in search found nothing.
    Rendered by hpclz when monitoring.agent is on and the VM data collection rule exists."""

    id = "HPCLZ-TPL-034"
    severity = Severity.WARNING
    title = "VM without the Azure Monitor agent or a data collection rule association"
    fix = (
        "Keep monitoring.agent and monitoring.diagnostic_settings on (or suppress where a platform policy installs "
        "the agent)."
    )

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        agents = {
            str(r.resource.get("name", "")).split("/")[0]
            for r in ctx.resources
            if r.type.lower() == EXTENSION and _props(r.resource).get("type") == "AzureMonitorLinuxAgent"
        }
        associated = {
            str(r.resource.get("scope", "")).rstrip("/").split("/")[-1]
            for r in ctx.resources
            if r.type.lower() == ASSOCIATION and "virtualMachines/" in str(r.resource.get("scope", ""))
        }
        for found in ctx.resources:
            if found.type.lower() != VM:
                continue
            name = str(found.resource.get("name", ""))
            missing = [
                what
                for what, ok in (
                    ("no AzureMonitorLinuxAgent extension", name in agents),
                    ("no data collection rule association", name in associated),
                )
                if not ok
            ]
            if missing:
                yield self.finding(ctx, found.path, f"{found.label}: {' and '.join(missing)}")
