"""Schema gate rules: the official ARM schemas, by scope, type and apiVersion (hpclz.arm.schema_gate)."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext


class ResourceMatchesSchema(Rule[TemplateContext]):
    """Every resource must validate against its official ARM schema (Azure/azure-resource-manager-schemas),
    picked by scope:type@apiVersion, and the template envelope against deploymentTemplate.json. A property of
    the wrong type is otherwise found by ARM only at deployment time. Mirrors arm-ttk "DeploymentTemplate
    Schema Is Correct", per resource. The schemas often allow unknown properties, so a misspelt name can
    still pass: necessary, not sufficient."""

    id = "HPCLZ-TPL-001"
    severity = Severity.ERROR
    title = "Template does not match the official ARM schema"
    fix = "Change the value at the path to what the schema expects for this type and apiVersion."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for problem in ctx.schema_problems:
            if not problem.unknown_type:
                where = f"resource {problem.resource}" if problem.resource else "template envelope"
                yield self.finding(ctx, problem.path, f"deployment {ctx.deployment}, {where}: {problem.message}")


class ResourceTypeKnown(Rule[TemplateContext]):
    """A type@apiVersion with no schema cannot be checked and, unless Azure knows it, fails at deployment.
    hpclz pins one apiVersion per type (the schema subset in hpclz/armschemas): extend the subset and
    the pinned table together to add a type."""

    id = "HPCLZ-TPL-002"
    severity = Severity.ERROR
    title = "Resource type or apiVersion unknown to the ARM schemas"
    fix = "Use a pinned type@apiVersion (docs: hpclz/armschemas/README.md) or add its schema to the subset."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for problem in ctx.schema_problems:
            if problem.unknown_type:
                yield self.finding(ctx, problem.path, f"deployment {ctx.deployment}: {problem.message}")
