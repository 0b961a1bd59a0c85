"""Folding simple expressions to constants, where a rule must compare names (dependsOn targets, resource names).

Only what is known before deployment folds: literals, parameters (deployment value, else defaultValue),
literal variables, concat() and format(). Anything else is None: "unknown", and rules then stay silent
rather than guess.
"""

from __future__ import annotations

import re
from typing import Any

from hpclz.arm.expressions import Call, Expr, ExpressionError, Literal, expression_body, parse
from hpclz.rules.template.context import TemplateContext

_FORMAT_HOLE = re.compile(r"\{(\d+)\}")


def fold_value(value: Any, ctx: TemplateContext, depth: int = 0) -> str | None:
    """The constant string a template value evaluates to, or None when it is not known offline."""
    if not isinstance(value, str) or depth > 8:
        return None
    body = expression_body(value)
    if body is None:
        return value[1:] if value.startswith("[[") else value
    try:
        return fold(parse(body), ctx, depth)
    except ExpressionError:
        return None


def fold(expr: Expr, ctx: TemplateContext, depth: int = 0) -> str | None:
    if isinstance(expr, Literal):
        return expr.value if isinstance(expr.value, str) else None
    if not isinstance(expr, Call):
        return None
    name = expr.name.lower()
    args = [fold(arg, ctx, depth) for arg in expr.args]
    if name in ("parameters", "variables") and len(args) == 1 and args[0] is not None:
        return _lookup(name, args[0], ctx, depth)
    if None in args:
        return None
    known = [a for a in args if a is not None]
    if name == "concat":
        return "".join(known)
    if name == "format" and known:
        return _FORMAT_HOLE.sub(
            lambda m: known[int(m.group(1)) + 1] if int(m.group(1)) + 1 < len(known) else "", known[0]
        )
    return None


def _lookup(function: str, name: str, ctx: TemplateContext, depth: int) -> str | None:
    lowered = name.lower()
    if function == "parameters":
        for key, value in ctx.parameter_values.items():
            if key.lower() == lowered:
                # A parameters file wraps each value as {"value": ...}; a plain dict does not.
                value = value.get("value") if isinstance(value, dict) else value
                return value if isinstance(value, str) else None
        for key, spec in ctx.parameters.items():
            if key.lower() == lowered and isinstance(spec, dict):
                return fold_value(spec.get("defaultValue"), ctx, depth + 1)
        return None
    for key, value in ctx.variables.items():
        if key.lower() == lowered:
            return fold_value(value, ctx, depth + 1)
    return None
