"""One ARM template written as one Bicep file.

Resources keep their type, API version, name and body. Bicep names dependencies and extension scopes by
symbol, not by resource ID string (learn.microsoft.com/azure/azure-resource-manager/bicep/resource-dependencies,
.../bicep/scope-extension-resources), so every resource gets a symbol and each dependsOn entry or `scope`
string is resolved to one; a scope outside the template becomes an `existing` declaration in the deployment's
resource group, which is where ARM resolves a relative scope string too. Nested child resources are flattened
with `parent:` (.../bicep/child-resource-name-type), keeping ARM's explicit dependsOn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hpclz.arm.api_versions import pinned_version
from hpclz.arm.expressions import parse_template_string
from hpclz.render.bicep import syntax
from hpclz.render.bicep.names import Segments, name_segments, reference_of
from hpclz.render.bicep.syntax import INDENT, BicepExportError

# Keys written by the exporter itself rather than copied from the ARM resource.
_HANDLED = {"type", "apiVersion", "name", "resources", "dependsOn", "scope", "comments", "condition"}
_UNSUPPORTED = {"copy"}
_PARAM_TYPES = {"string": "string", "securestring": "string", "int": "int", "bool": "bool", "object": "object"}
_PARAM_TYPES |= {"secureobject": "object", "array": "array"}
_DECORATED = {"allowedValues": "allowed", "minValue": "minValue", "maxValue": "maxValue"}
_DECORATED |= {"minLength": "minLength", "maxLength": "maxLength"}


@dataclass
class Flat:
    """A resource lifted out of any nesting, with the type and name segments ARM gives it at top level."""

    body: dict[str, Any]
    type: str
    key: Segments | None  # None when the name cannot be reduced to segments
    parent: Flat | None = None
    symbol: str = ""


@dataclass
class Module:
    resources: list[Flat] = field(default_factory=list)
    existing: dict[tuple[str, Segments], tuple[str, str, str]] = field(default_factory=dict)  # symbol, type, name
    symbols: set[str] = field(default_factory=set)

    def index(self) -> dict[tuple[str, Segments], str]:
        found = {(r.type.lower(), r.key): r.symbol for r in self.resources if r.key is not None}
        return found | {k: v[0] for k, v in self.existing.items()}


def flatten(resources: list[dict[str, Any]], parent: Flat | None = None) -> list[Flat]:
    out: list[Flat] = []
    for body in resources:
        if _UNSUPPORTED & body.keys():
            raise BicepExportError(f"{body.get('type')}: {sorted(_UNSUPPORTED & body.keys())} is not exported")
        kind, key = str(body["type"]), name_segments(body["name"])
        if parent is not None:
            kind = kind if kind.lower().startswith(parent.type.lower() + "/") else f"{parent.type}/{kind}"
            key = parent.key + key if parent.key is not None and key is not None else None
        flat = Flat(body=body, type=kind, key=key, parent=parent)
        out.append(flat)
        out.extend(flatten(list(body.get("resources", [])), flat))
    return out


def _symbol(module: Module, base: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", base).strip("_") or "resource"
    cleaned = cleaned if cleaned[0].isalpha() else f"r_{cleaned}"
    candidate, n = cleaned, 2
    while candidate.lower() in module.symbols:
        candidate, n = f"{cleaned}_{n}", n + 1
    module.symbols.add(candidate.lower())
    return candidate


def _resolve(module: Module, target: str, *, declare: bool) -> str:
    # ARM's dependsOn also takes a resource's own name (a role assignment's `[guid(...)]`): the same resource.
    named = [r.symbol for r in module.resources if not declare and r.body.get("name") == target]
    if len(named) == 1:
        return named[0]
    kind, key = reference_of(target)
    found = module.index().get((kind.lower(), key))
    if found is not None:
        return found
    if not declare:
        raise BicepExportError(f"dependsOn {target!r} names no resource of this template")
    version = pinned_version(kind)
    parsed = parse_template_string(target)
    if version is None or parsed is not None:
        raise BicepExportError(f"scope {target!r}: only a relative ID of a type hpclz pins can become `existing`")
    name = "/".join(target.strip("/").split("/")[2::2])
    symbol = _symbol(module, f"existing_{kind.split('/')[-1]}_{name}")
    module.existing[(kind.lower(), key)] = (symbol, kind, name)
    return symbol


def parameter(name: str, spec: dict[str, Any]) -> list[str]:
    kind = str(spec.get("type", "")).lower()
    if kind not in _PARAM_TYPES:
        raise BicepExportError(f"parameter {name}: type {spec.get('type')!r} is not exported")
    lines = ["@secure()"] if kind.startswith("secure") else []
    description = (spec.get("metadata") or {}).get("description")
    if description:
        lines.append(f"@description({syntax.string(str(description))})")
    lines += [f"@{deco}({syntax.value(spec[k])})" for k, deco in _DECORATED.items() if k in spec]
    default = f" = {syntax.value(spec['defaultValue'])}" if "defaultValue" in spec else ""
    return [*lines, f"param {name} {_PARAM_TYPES[kind]}{default}"]


def _resource(module: Module, flat: Flat) -> list[str]:
    body = flat.body
    lines = [f"// {line}" for line in str(body.get("comments", "")).splitlines()]
    head = f"resource {flat.symbol} '{flat.type}@{body['apiVersion']}' = "
    if "condition" in body:
        head += f"if ({syntax.value(body['condition'])}) "
    entries: list[tuple[str, str]] = []
    if flat.parent is not None:
        entries.append(("parent", flat.parent.symbol))
    entries.append(("name", syntax.value(body["name"], 1)))
    entries += [(syntax.key(k), syntax.value(v, 1)) for k, v in body.items() if k not in _HANDLED]
    if "scope" in body:
        entries.append(("scope", _resolve(module, str(body["scope"]), declare=True)))
    depends = [_resolve(module, str(d), declare=False) for d in body.get("dependsOn", [])]
    if depends:
        entries.append(("dependsOn", "[\n" + "".join(f"{INDENT * 2}{d}\n" for d in depends) + f"{INDENT}]"))
    return [*lines, head + "{", *(f"{INDENT}{k}: {v}" for k, v in entries), "}"]


def _existing(module: Module) -> list[str]:
    lines: list[str] = []
    for symbol, kind, name in module.existing.values():
        lines += [f"resource {symbol} '{kind}@{pinned_version(kind)}' existing = {{"]
        lines += [f"{INDENT}name: {syntax.string(name)}", "}", ""]
    return lines


def module_text(template: dict[str, Any], *, target_scope: str) -> str:
    """The Bicep file equivalent to one ARM template deployed at `target_scope`."""
    for unsupported in ("variables", "functions"):
        if template.get(unsupported):
            raise BicepExportError(f"template {unsupported} are not exported")
    module = Module(symbols={p.lower() for p in template.get("parameters", {})})
    module.resources = flatten(list(template.get("resources", [])))
    for flat in module.resources:
        label = flat.key[-1] if flat.key and re.fullmatch(r"[a-z0-9_.-]+", flat.key[-1]) else "item"
        flat.symbol = _symbol(module, f"{flat.type.split('/')[-1]}_{label}")
    out = [f"targetScope = '{target_scope}'", ""]
    for name, spec in template.get("parameters", {}).items():
        out += [*parameter(name, spec), ""]
    blocks = [line for flat in module.resources for line in [*_resource(module, flat), ""]]
    out += _existing(module) + blocks
    for name, spec in template.get("outputs", {}).items():
        kind = _PARAM_TYPES.get(str(spec.get("type", "")).lower(), "object")
        out += [f"output {name} {kind} = {syntax.value(spec['value'])}", ""]
    return "\n".join(out).rstrip("\n") + "\n"
