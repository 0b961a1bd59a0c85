"""Which parameters and variables a template's expressions reference, and where."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from hpclz.arm.expressions import Call, Literal, walk
from hpclz.arm.walk import JsonPath, as_list
from hpclz.config.source_map import lookup
from hpclz.rules.template.context import TemplateContext


@dataclass
class References:
    by_name: dict[str, list[JsonPath]] = field(default_factory=lambda: defaultdict(list))  # lower-case names
    dynamic: bool = False  # some reference is computed (parameters(concat(...))), so "unused" cannot be known


def references(ctx: TemplateContext, function: str) -> References:
    """References made by `function` ("parameters" or "variables") in the template's own scope."""
    found = References()
    for parsed in ctx.expressions:
        if parsed.expr is None or not in_template_scope(ctx, parsed.path):
            continue
        for node in walk(parsed.expr):
            if not (isinstance(node, Call) and node.name.lower() == function and node.args):
                continue
            first = node.args[0]
            if isinstance(first, Literal) and isinstance(first.value, str):
                found.by_name[first.value.lower()].append(parsed.path)
            else:
                found.dynamic = True
    return found


def in_template_scope(ctx: TemplateContext, path: JsonPath) -> bool:
    """False inside user-defined functions and inner-scoped nested templates, whose parameters are their own."""
    if path[:1] == ("functions",):
        return False
    for index, part in enumerate(path):
        if part == "template" and index >= 1 and path[index - 1] == "properties":
            options = lookup(ctx.template, (*path[: index - 1], "properties", "expressionEvaluationOptions"))
            if isinstance(options, dict) and str(options.get("scope", "")).lower() == "inner":
                return False
    return True


def declared_variables(ctx: TemplateContext) -> dict[str, str]:
    """lower-case name -> declared name; a `copy` block in variables declares one variable per entry."""
    names = {name.lower(): name for name in ctx.variables if name != "copy"}
    for entry in as_list(ctx.variables.get("copy")):
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            names[entry["name"].lower()] = entry["name"]
    return names
