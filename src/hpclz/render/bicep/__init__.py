"""Bicep export: the rendered DeploymentPlan as main.bicep plus one module per deployment.

A transformation of the ARM JSON hpclz deploys, not a second set of templates, so it follows every template
change. main.bicep deploys at subscription scope and calls each module at the deployment's scope
(resourceGroup('<name>') for resource-group deployments), in the plan's dependency order
(learn.microsoft.com/azure/azure-resource-manager/bicep/modules). Secure parameters stay parameters of
main.bicep marked @secure(); their values are never written.
"""

from __future__ import annotations

from hpclz.render.bicep.module import module_text
from hpclz.render.bicep.syntax import INDENT, BicepExportError, string, value
from hpclz.render.model import Deployment, DeploymentPlan, Scope

__all__ = ["MAIN", "MODULES", "BicepExportError", "bicep_files", "module_path"]

MAIN = "main.bicep"
MODULES = "modules"


def module_path(index: int, deployment: Deployment) -> str:
    return f"{MODULES}/{index:02d}-{deployment.component}.bicep"


def bicep_files(plan: DeploymentPlan) -> dict[str, str]:
    """Relative path -> text of main.bicep and every module."""
    files = {}
    for index, d in enumerate(plan.deployments, start=1):
        scope = "subscription" if d.scope is Scope.SUBSCRIPTION else "resourceGroup"
        files[module_path(index, d)] = module_text(d.template, target_scope=scope)
    return {MAIN: main_text(plan), **files}


def _module_symbols(plan: DeploymentPlan) -> dict[str, str]:
    symbols: dict[str, str] = {}
    for d in plan.deployments:
        base = "".join(ch if ch.isalnum() else "_" for ch in d.component) or "module"
        symbol, n = base, 2
        while symbol in symbols.values():
            symbol, n = f"{base}_{n}", n + 1
        symbols[d.name] = symbol
    return symbols


def _main_parameters(plan: DeploymentPlan) -> dict[str, tuple[str, str]]:
    """Parameters main.bicep takes: the secure ones (name -> config path, type)."""
    found: dict[str, tuple[str, str]] = {}
    for d in plan.deployments:
        for name, path in d.secure_parameters.items():
            kind = str(d.template.get("parameters", {}).get(name, {}).get("type", "securestring")).lower()
            if name in found and found[name][0] != path:
                raise BicepExportError(f"secure parameter {name} means {found[name][0]} and {path}")
            found[name] = (path, "object" if kind == "secureobject" else "string")
    return found


def _module(d: Deployment, index: int, symbol: str, symbols: dict[str, str]) -> list[str]:
    lines = [f"module {symbol} '{module_path(index, d)}' = {{", f"{INDENT}name: {string(d.name)}"]
    if d.scope is Scope.RESOURCE_GROUP:
        lines.append(f"{INDENT}scope: resourceGroup({string(d.resource_group or '')})")
    params = [f"{INDENT * 2}{name}: {value(v, 2)}" for name, v in sorted(d.parameters.items())]
    params += [f"{INDENT * 2}{name}: {name}" for name in sorted(d.secure_parameters)]
    if params:
        lines += [f"{INDENT}params: {{", *params, f"{INDENT}}}"]
    if d.depends_on:
        lines += [f"{INDENT}dependsOn: [", *(f"{INDENT * 2}{symbols[n]}" for n in d.depends_on), f"{INDENT}]"]
    return [*lines, "}", ""]


def main_text(plan: DeploymentPlan) -> str:
    symbols = _module_symbols(plan)
    out = [
        f"// hpclz landing zone {plan.landing_zone} ({plan.environment}, {plan.location}), config {plan.config_hash}",
        "targetScope = 'subscription'",
        "",
    ]
    for name, (path, kind) in sorted(_main_parameters(plan).items()):
        out += ["@secure()", f"@description({string('hpclz: ' + path)})", f"param {name} {kind}", ""]
    for index, d in enumerate(plan.deployments, start=1):
        out += _module(d, index, symbols[d.name], symbols)
    return "\n".join(out).rstrip("\n") + "\n"
