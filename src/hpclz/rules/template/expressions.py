"""Template expression rules: every "[...]" string parses, calls real functions and names declared things."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.arm.expressions import Call, looks_like_broken_expression, walk
from hpclz.arm.functions import is_known_function
from hpclz.arm.walk import iter_strings
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext
from hpclz.rules.template.references import declared_variables, references


class ExpressionParses(Rule[TemplateContext]):
    """A "[...]" string must parse as an ARM expression, and a string that opens like one ("[concat(...") must
    close with "]": ARM silently treats it as a literal, so a typo deploys the expression's text as a value.
    ARM itself rejects unparsable expressions only at deployment (InvalidTemplate); arm-ttk parses every
    expression while expanding the template (Expand-AzTemplate) before its tests run."""

    id = "HPCLZ-TPL-010"
    severity = Severity.ERROR
    title = "Template expression does not parse"
    fix = "Balance the brackets, parentheses and quotes ('' escapes a quote); start a literal '[' with '[['."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for parsed in ctx.expressions:
            if parsed.error is not None:
                yield self.finding(ctx, parsed.path, f"{parsed.text!r}: {parsed.error}")
        for path, text in iter_strings(ctx.template):
            if looks_like_broken_expression(text):
                yield self.finding(ctx, path, f"{text!r} opens an expression but does not end with ']'")


class FunctionsExist(Rule[TemplateContext]):
    """Every function an expression calls must be an ARM template function (template-functions reference) or a
    member of the template's own `functions` namespaces. ARM's error for a misspelt function surfaces only at
    deployment. arm-ttk has no separate test; its expression expansion fails on unknown functions."""

    id = "HPCLZ-TPL-011"
    severity = Severity.ERROR
    title = "Template expression calls an unknown function"
    fix = "Use a function from the ARM template-functions reference, or define it under the template's `functions`."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for parsed in ctx.expressions:
            if parsed.expr is None:
                continue
            for node in walk(parsed.expr):
                if isinstance(node, Call) and not is_known_function(node.name, ctx.user_functions):
                    yield self.finding(ctx, parsed.path, f"{node.name}() is not an ARM template function")


class ReferencesDeclared(Rule[TemplateContext]):
    """parameters('x') and variables('x') must name a declared parameter or variable (ARM compares names without
    case). Mirrors ARM's own template validation ("The template parameter 'x' is not found"), which arm-ttk
    relies on; catching it here saves a failed deployment."""

    id = "HPCLZ-TPL-012"
    severity = Severity.ERROR
    title = "Expression references an undeclared parameter or variable"
    fix = "Declare the parameter or variable, or correct the name in the expression."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        declared = {
            "parameters": {name.lower() for name in ctx.parameters},
            "variables": set(declared_variables(ctx)),
        }
        for function, names in declared.items():
            for name, paths in references(ctx, function).by_name.items():
                if name not in names:
                    for path in paths:
                        yield self.finding(ctx, path, f"{function}('{name}') is not declared in the template")


class DeclarationsUsed(Rule[TemplateContext]):
    """Every declared parameter and variable must be referenced. Mirrors arm-ttk "Parameters Must Be
    Referenced" and "Variables Must Be Referenced": an unused one usually means a value the author thinks is
    applied is silently ignored. Skipped when a name is computed (parameters(concat(...))), as arm-ttk does."""

    id = "HPCLZ-TPL-013"
    severity = Severity.WARNING
    title = "Template parameter or variable is never used"
    fix = "Reference it where it was meant to apply, or remove it from the template."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        declared = {
            "parameters": {name.lower(): name for name in ctx.parameters},
            "variables": declared_variables(ctx),
        }
        for function, names in declared.items():
            used = references(ctx, function)
            if used.dynamic:
                continue
            for lowered, name in names.items():
                if lowered not in used.by_name:
                    yield self.finding(ctx, (function, name), f"{function[:-1]} '{name}' is declared but never used")
