"""One comparable shape for an ARM template and the Bicep file exported from it.

The ARM side is read from the template JSON and its expressions parsed with hpclz.arm.expressions; the Bicep
side is read from pycep-parser's syntax tree (an independent Bicep grammar), never from the exporter's own
data. Both become {(type, name): {"api": ..., "body": ..., "depends": {...}, "scope": ...}} where expressions
are nested tuples ("call", name, args...), ("prop", target, name), ("param", name).

pycep prints identifiers and string literals alike as bare strings (and keeps their escapes), so a bare
string equal to a declared parameter name is read as that parameter; the exporter's literals never collide
because ARM parameter names in hpclz templates are camelCase identifiers no resource property uses as text.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from pycep import BicepParser

from hpclz.arm.expressions import Expr, Index, Literal, Property, parse_template_string

_BICEP_ESCAPE = re.compile(r"\\(u\{[0-9A-Fa-f]+\}|.)")
_ESCAPED = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "'": "'", "$": "$"}
_SKIPPED = {"type", "apiVersion", "name", "resources", "dependsOn", "scope", "comments", "parent"}


@functools.cache
def _parser() -> BicepParser:
    return BicepParser()  # building the LALR tables costs seconds; one parser serves every file


def parse_bicep(path: Path) -> dict[str, Any]:
    return dict(_parser().parse(file_path=path))


# ---- ARM side -------------------------------------------------------------------------------------------------


def _arm_expr(expr: Expr) -> Any:
    if isinstance(expr, Literal):
        return expr.value
    if isinstance(expr, Property):
        return ("prop", _arm_expr(expr.target), expr.name)
    if isinstance(expr, Index):
        return ("index", _arm_expr(expr.target), _arm_expr(expr.index))
    if expr.name.lower() == "parameters":
        [name] = expr.args
        assert isinstance(name, Literal), name  # parameters('name'): ARM takes the name as a string literal
        return ("param", name.value)
    return ("call", expr.name.lower(), *(_arm_expr(a) for a in expr.args))


def arm_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: arm_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [arm_value(v) for v in value]
    if isinstance(value, str):
        parsed = parse_template_string(value)
        if parsed is not None:
            return _arm_expr(parsed)
        return value[1:] if value.startswith("[[") else value
    return value


def segments(value: Any) -> tuple[str, ...]:
    """A name as '/'-separated segments: literal text, format('{0}/{1}', ...) pieces, or a whole expression."""
    if isinstance(value, str):
        return tuple(value.lower().split("/"))
    if isinstance(value, tuple) and value[:2] == ("call", "format") and isinstance(value[2], str):
        out: list[str] = []
        for piece in value[2].split("/"):
            match = re.fullmatch(r"\{(\d+)\}", piece)
            out.extend(segments(value[3 + int(match.group(1))]) if match else (piece.lower(),))
        return tuple(out)
    return (repr(value).lower(),)


def _ref(text: str) -> tuple[str, tuple[str, ...]]:
    value = arm_value(text)
    if isinstance(value, str):
        parts = value.strip("/").split("/")
        return "/".join([parts[0], *parts[1::2]]).lower(), tuple(p.lower() for p in parts[2::2])
    args = list(value[2:])
    at = next(i for i, a in enumerate(args) if isinstance(a, str) and "." in a.split("/")[0] and "/" in a)
    return str(args[at]).lower(), tuple(s for a in args[at + 1 :] for s in segments(a))


def arm_resources(template: dict[str, Any]) -> dict[tuple[str, Any], dict[str, Any]]:
    out: dict[tuple[str, Any], dict[str, Any]] = {}
    # ARM's dependsOn also takes a resource's own name (a role assignment's `[guid(...)]`).
    by_name = {
        r["name"]: (str(r["type"]).lower(), segments(arm_value(r["name"]))) for r in template.get("resources", [])
    }

    def visit(resources: list[dict[str, Any]], parent: tuple[str, tuple[str, ...]] | None) -> None:
        for r in resources:
            kind, key = str(r["type"]), segments(arm_value(r["name"]))
            if parent is not None:
                kind = kind if kind.lower().startswith(parent[0] + "/") else f"{parent[0]}/{kind}"
                key = parent[1] + key
            out[(kind.lower(), key)] = {
                "api": r["apiVersion"],
                "body": {k: arm_value(v) for k, v in r.items() if k not in _SKIPPED},
                "depends": {by_name.get(d) or _ref(d) for d in r.get("dependsOn", [])},
                "scope": _ref(r["scope"]) if "scope" in r else None,
            }
            visit(list(r.get("resources", [])), (kind.lower(), key))

    visit(list(template.get("resources", [])), None)
    return out


# ---- Bicep side -----------------------------------------------------------------------------------------------


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        return chr(int(code[2:-1], 16)) if code.startswith("u{") else _ESCAPED.get(code, code)

    return _BICEP_ESCAPE.sub(one, text)


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return (head + "".join(part.title() for part in rest)).lower()


def _arguments(named: dict[str, Any]) -> list[Any]:
    """Arguments in call order. pycep files resourceId's leading scope arguments under named slots after the
    type and names, whatever position they had; ARM order puts subscription and resource group first."""
    leading = [named[k] for k in ("subscription_id", "resource_group_name") if named.get(k) is not None]
    rest = [v for k, v in named.items() if k not in ("subscription_id", "resource_group_name")]
    args = [*leading, *rest]
    while args and args[-1] is None:
        args.pop()
    return args


class BicepReader:
    def __init__(self, tree: dict[str, Any]):
        self.params = set(tree.get("parameters") or {})
        self.resources: dict[str, Any] = tree.get("resources") or {}

    def value(self, node: Any) -> Any:
        if isinstance(node, str):
            return ("param", node) if node in self.params else _unescape(node)
        if isinstance(node, list):
            return [self.value(v) for v in node]
        if not isinstance(node, dict):
            return node
        if set(node) == {"function"}:
            args = _arguments(node["function"]["parameters"])
            return ("call", _camel(node["function"]["type"]), *(self.value(a) for a in args))
        if set(node) == {"operator"}:
            op = node["operator"]
            first, second = op["operands"]["operand_1"], op["operands"]["operand_2"]
            if op["type"] == "property_accessor":
                return _chain(self.value(first), second)
            if op["type"] == "index_accessor":
                return ("index", self.value(first), self.value(second))
            raise AssertionError(f"exporter wrote an operator it should not: {op['type']}")
        return {_unescape(k[1:-1]) if k.startswith("'") else k: self.value(v) for k, v in node.items()}

    def identity(self, symbol: str) -> tuple[str, tuple[str, ...]]:
        resource = self.resources[symbol]
        config = resource["config"]
        key = segments(self.value(config["name"]))
        parent = config.get("parent")
        if parent is not None:
            key = self.identity(parent)[1] + key
        return resource["type"].lower(), key

    def declared(self) -> dict[tuple[str, Any], dict[str, Any]]:
        out = {}
        for symbol, resource in self.resources.items():
            if resource["existing"]:
                continue
            config = resource["config"]
            out[self.identity(symbol)] = {
                "api": resource["api_version"],
                "body": {k: self.value(v) for k, v in config.items() if k not in _SKIPPED},
                "depends": {self.identity(s) for s in config.get("dependsOn") or []},
                "scope": self.identity(config["scope"]) if "scope" in config else None,
            }
        return out


def _chain(target: Any, accessor: Any) -> Any:
    """pycep nests `a.b.c` to the right (a, accessor(b, c)); ARM's parse nests it to the left."""
    if isinstance(accessor, dict) and accessor.get("operator", {}).get("type") == "property_accessor":
        operands = accessor["operator"]["operands"]
        return _chain(("prop", target, operands["operand_1"]), operands["operand_2"])
    return ("prop", target, accessor)
