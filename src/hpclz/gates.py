"""The three gates a rendered plan passes before it may be deployed: ARM schemas, template lint, checkov.

`hpclz render` calls check_plan; each gate's findings are kept apart so a user sees which gate failed.
A gate that cannot run says why: the schema gate raises (the schemas ship inside the package, so a missing
folder is a broken install), checkov is optional for users and is reported "not run" with how to install it.
checkov's results are cached per template (hpclz.arm.gate_cache): an unchanged template is not scanned again.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from hpclz.arm import checkov_gate, gate_cache, schema_gate
from hpclz.findings import Finding, Severity, count_by_severity, worst_severity
from hpclz.render.writer import file_stem
from hpclz.rules.base import Rule, run_rules
from hpclz.rules.template import ALLOWLIST_RULES, CHECKOV_RULES, LINT_RULES, SCHEMA_RULES
from hpclz.rules.template.checkov import AllowlistContext
from hpclz.rules.template.context import TemplateContext

if TYPE_CHECKING:
    from hpclz.render.model import DeploymentPlan


class Gate(StrEnum):
    SCHEMA = "schema"
    LINT = "lint"
    CHECKOV = "checkov"


class GateResult(BaseModel):
    gate: Gate
    ran: bool
    not_run_reason: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    suppressed: list[Finding] = Field(default_factory=list)
    from_cache: list[str] = Field(default_factory=list, description="templates whose results came from the cache")
    scanned: list[str] = Field(default_factory=list, description="templates the gate's tool actually scanned")

    @property
    def counts(self) -> dict[str, int]:
        return count_by_severity(self.findings)


class GateReport(BaseModel):
    """Findings per gate, which gates ran, and counts by severity."""

    results: dict[Gate, GateResult] = Field(default_factory=dict)

    @property
    def ran(self) -> list[Gate]:
        return [gate for gate, result in self.results.items() if result.ran]

    @property
    def not_run(self) -> dict[Gate, str]:
        return {gate: r.not_run_reason or "disabled" for gate, r in self.results.items() if not r.ran}

    @property
    def findings(self) -> list[Finding]:
        return [f for result in self.results.values() for f in result.findings]

    @property
    def counts(self) -> dict[str, dict[str, int]]:
        return {gate.value: result.counts for gate, result in self.results.items()}

    def passed(self, fail_level: Severity = Severity.ERROR) -> bool:
        worst = worst_severity(self.findings)
        return worst is None or not worst.at_least(fail_level)


def template_files(plan: DeploymentPlan) -> list[str]:
    """The names `hpclz render` writes each template as, so findings and checkov point at those files."""
    return [f"{file_stem(index, d)}.template.json" for index, d in enumerate(plan.deployments, start=1)]


def check_plan(
    plan: DeploymentPlan,
    *,
    schema: bool = True,
    lint: bool = True,
    checkov: bool = True,
    allowlist: Path | None = None,
    suppress: Iterable[str] = (),
) -> GateReport:
    silenced = list(suppress)
    files = template_files(plan)
    contexts = [TemplateContext.from_deployment(d, file=f) for d, f in zip(plan.deployments, files, strict=True)]
    for context in contexts:
        context.plan_templates = {d.name: d.template for d in plan.deployments if d.name != context.deployment}
    report = GateReport()
    report.results[Gate.SCHEMA] = _skipped(Gate.SCHEMA)
    if schema:
        schema_gate.load_schemas()  # raises a clear HpclzError before any rule would turn it into a crash finding
        report.results[Gate.SCHEMA] = _run_gate(Gate.SCHEMA, SCHEMA_RULES, contexts, silenced)
    report.results[Gate.LINT] = _run_gate(Gate.LINT, LINT_RULES, contexts, silenced) if lint else _skipped(Gate.LINT)
    report.results[Gate.CHECKOV] = _checkov_gate(contexts, allowlist, silenced) if checkov else _skipped(Gate.CHECKOV)
    return report


def _skipped(gate: Gate, reason: str = "disabled") -> GateResult:
    return GateResult(gate=gate, ran=False, not_run_reason=reason)


def _run_gate(gate: Gate, rules: tuple[type[Rule[Any]], ...], contexts: list[Any], suppress: list[str]) -> GateResult:
    result = GateResult(gate=gate, ran=True)
    for ctx in contexts:
        reported, suppressed = run_rules(rules, ctx, suppress)
        result.findings.extend(reported)
        result.suppressed.extend(suppressed)
    return result


def _checkov_gate(contexts: list[TemplateContext], allowlist_path: Path | None, suppress: list[str]) -> GateResult:
    if not contexts:
        return _skipped(Gate.CHECKOV, "the plan has no templates")  # an empty scan would call every skip stale
    executable = checkov_gate.find_checkov()
    if executable is None:
        return _skipped(Gate.CHECKOV, checkov_gate.NOT_INSTALLED)
    allowlist = checkov_gate.load_allowlist(allowlist_path)
    templates = {c.file or c.deployment: c.template for c in contexts}
    scanned = gate_cache.scan_with_cache(templates, allowlist, executable, checkov_gate.run_checkov)
    run = scanned.run
    unparsed = {Path(p).name for p in run.parsing_errors}
    for ctx in contexts:
        ctx.checkov_failures = [f for f in run.failures if f.file == ctx.file]
        ctx.checkov_unparsed = ctx.file in unparsed
    result = _run_gate(Gate.CHECKOV, CHECKOV_RULES, contexts, suppress)
    stale_ctx = AllowlistContext(allowlist, run.still_failing_allowlisted)
    stale = _run_gate(Gate.CHECKOV, ALLOWLIST_RULES, [stale_ctx], suppress)
    result.findings.extend(stale.findings)
    result.suppressed.extend(stale.suppressed)
    result.from_cache, result.scanned = scanned.from_cache, scanned.scanned
    return result
