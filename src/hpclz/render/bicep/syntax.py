"""ARM JSON values and expressions written as Bicep syntax.

Bicep's grammar (learn.microsoft.com/azure/azure-resource-manager/bicep/file): strings are single-quoted with
backslash escapes (\\\\, \\', \\n, \\r, \\t, \\$ so that "${" never opens an interpolation); object keys that are
not identifiers are quoted; there are no float literals, so a float goes through json('1.5'). ARM template
functions hpclz uses (resourceId, subscriptionResourceId, guid, json, reference, subscription) exist in Bicep
under the same names and argument order (learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-functions),
so an ARM expression tree is printed call for call; only parameters('x') becomes the bare identifier x.
"""

from __future__ import annotations

import re
from typing import Any

from hpclz.arm.expressions import Call, Expr, Index, Literal, Property, parse_template_string

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
INDENT = "  "
_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class BicepExportError(ValueError):
    """The ARM template uses something this exporter cannot write as equivalent Bicep."""


def string(value: str) -> str:
    escaped = "".join(_ESCAPES.get(ch, ch) for ch in value).replace("${", "\\${")
    return f"'{escaped}'"


def key(name: str) -> str:
    return name if IDENTIFIER.match(name) else string(name)


def expression(expr: Expr) -> str:
    """One ARM expression tree as a Bicep expression."""
    if isinstance(expr, Literal):
        return scalar(expr.value)
    if isinstance(expr, Property):
        return f"{expression(expr.target)}.{expr.name}"
    if isinstance(expr, Index):
        return f"{expression(expr.target)}[{expression(expr.index)}]"
    return _call(expr)


def _call(call: Call) -> str:
    if call.name.lower() == "parameters":
        if len(call.args) != 1 or not isinstance(call.args[0], Literal) or not isinstance(call.args[0].value, str):
            raise BicepExportError("parameters() needs one literal parameter name to become a Bicep identifier")
        return call.args[0].value
    if call.name.lower() == "variables" or "." in call.name:
        raise BicepExportError(f"{call.name}() has no Bicep equivalent in this exporter")
    return f"{call.name}({', '.join(expression(a) for a in call.args)})"


def scalar(value: str | int | float | bool | None) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"json('{value!r}')"
    return string(value)


def template_string(value: str) -> str:
    """A JSON string of a template: an expression ("[...]"), an escaped literal ("[[..."), or a literal."""
    parsed = parse_template_string(value)
    if parsed is not None:
        return expression(parsed)
    return string(value[1:] if value.startswith("[[") else value)


def value(data: Any, depth: int = 0) -> str:
    """Any template JSON value, objects and arrays one entry a line, indented `depth` levels."""
    if isinstance(data, dict):
        if not data:
            return "{}"
        inner = INDENT * (depth + 1)
        lines = [f"{inner}{key(k)}: {value(v, depth + 1)}" for k, v in data.items()]
        return "{\n" + "\n".join(lines) + "\n" + INDENT * depth + "}"
    if isinstance(data, list):
        if not data:
            return "[]"
        inner = INDENT * (depth + 1)
        return "[\n" + "\n".join(f"{inner}{value(v, depth + 1)}" for v in data) + "\n" + INDENT * depth + "]"
    if isinstance(data, str):
        return template_string(data)
    return scalar(data)
