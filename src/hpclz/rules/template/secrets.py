"""Secret-handling lint: secure parameters, outputs and passwords."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hpclz.arm.expressions import Call, Expr, ExpressionError, Literal, parse_template_string, walk
from hpclz.arm.functions import returns_secrets
from hpclz.arm.walk import iter_entries
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext

PASSWORD_KEY = "adminpassword"


class SecureParameterNoDefault(Rule[TemplateContext]):
    """A secureString/secureObject parameter must not have a defaultValue: the default sits in the template in
    clear text and in the deployment history. Mirrors arm-ttk "Secure String Parameters Cannot Have Default"
    (which allows an empty default or newGuid())."""

    id = "HPCLZ-TPL-020"
    severity = Severity.ERROR
    title = "Secure parameter has a default value"
    fix = "Remove the defaultValue; hpclz passes secure values at deploy time from the config's secret references."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for name, spec in ctx.parameters.items():
            if name.lower() in ctx.secure_parameters and _has_real_default(spec):
                yield self.finding(ctx, ("parameters", name, "defaultValue"), f"secure parameter {name} has a default")


def _has_real_default(spec: dict[str, Any]) -> bool:
    default = spec.get("defaultValue")
    if default in (None, "", {}):
        return False
    return not (isinstance(default, str) and default.replace(" ", "").lower() == "[newguid()]")


class OutputsWithoutSecrets(Rule[TemplateContext]):
    """Outputs are stored in the deployment history, readable by anyone with read access to the resource group,
    and end up in hpclz state: they must not return secure parameters or list*() results (keys, SAS tokens,
    connection strings). Mirrors arm-ttk "Outputs Must Not Contain Secrets"."""

    id = "HPCLZ-TPL-021"
    severity = Severity.ERROR
    title = "Output exposes a secret"
    fix = "Drop the output; read keys where they are needed (Key Vault reference, managed identity)."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        outputs = ctx.template.get("outputs")
        if not isinstance(outputs, dict):
            return
        prefix = ("outputs",)
        for parsed in ctx.expressions:
            if parsed.path[:1] != prefix or parsed.expr is None:
                continue
            for node in walk(parsed.expr):
                leak = _leak(node, ctx)
                if leak:
                    yield self.finding(ctx, parsed.path, f"output {parsed.path[1]} {leak}")


def _leak(node: Any, ctx: TemplateContext) -> str | None:
    if not isinstance(node, Call):
        return None
    if returns_secrets(node.name):
        return f"returns {node.name}(), which yields keys or secrets"
    secure = _secure_parameter(node, ctx)
    return f"returns secure parameter {secure}" if secure is not None else None


def _secure_parameter(node: Expr | None, ctx: TemplateContext) -> str | None:
    """The secure parameter a `parameters('<name>')` call reads; None for any other node."""
    if isinstance(node, Call) and node.name.lower() == "parameters" and node.args:
        first = node.args[0]
        if isinstance(first, Literal) and str(first.value).lower() in ctx.secure_parameters:
            return str(first.value)
    return None


class PasswordsSecure(Rule[TemplateContext]):
    """A parameter whose name contains "password" must be secureString/secureObject, and an adminPassword
    property must come from a secure parameter, never a literal: otherwise the password is stored in clear
    text in the template and deployment history. Mirrors arm-ttk "Password params must be secure"."""

    id = "HPCLZ-TPL-022"
    severity = Severity.ERROR
    title = "Password is not a secure parameter"
    fix = "Declare the password parameter as secureString and set adminPassword to [parameters('<that name>')]."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for name, spec in ctx.parameters.items():
            if "password" in name.lower() and name.lower() not in ctx.secure_parameters:
                kind = spec.get("type") if isinstance(spec, dict) else spec
                yield self.finding(ctx, ("parameters", name, "type"), f"parameter {name} has type {kind!r}")
        # Everywhere but the parameter declarations, whose adminPassword entry is the secure parameter itself.
        body = {key: value for key, value in ctx.template.items() if key != "parameters"}
        for path, value in iter_entries(body, lambda key, _: key.lower() == PASSWORD_KEY):
            if not _from_secure_parameter(value, ctx):
                yield self.finding(ctx, path, f"adminPassword is {_shown(value)}, not a secure parameter")


def _from_secure_parameter(value: Any, ctx: TemplateContext) -> bool:
    if not isinstance(value, str):
        return False
    try:
        expr = parse_template_string(value)
    except ExpressionError:
        return False
    return isinstance(expr, Call) and len(expr.args) == 1 and _secure_parameter(expr, ctx) is not None


def _shown(value: Any) -> str:
    return "an expression" if isinstance(value, str) and value.startswith("[") else "a literal value"


class LinuxPasswordLoginDisabled(Rule[TemplateContext]):
    """Linux VMs and scale sets must set linuxConfiguration.disablePasswordAuthentication to true: HPC nodes are
    reached with SSH keys (CAF HPC security guidance), and password login invites brute force on any exposed
    node. arm-ttk has no such test; checkov's CKV_AZURE_149 checks the same, but only where checkov is installed."""

    id = "HPCLZ-TPL-023"
    severity = Severity.ERROR
    title = "Linux osProfile allows password login"
    fix = "Set osProfile.linuxConfiguration.disablePasswordAuthentication to true and provide SSH public keys."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        profiles = iter_entries(ctx.template, lambda key, value: key == "osProfile" and isinstance(value, dict))
        for path, profile in profiles:
            if "windowsConfiguration" in profile:
                continue
            linux = profile.get("linuxConfiguration")
            disabled = linux.get("disablePasswordAuthentication") if isinstance(linux, dict) else None
            if disabled is not True:
                yield self.finding(
                    ctx, (*path, "linuxConfiguration"), f"disablePasswordAuthentication is {disabled!r}, not true"
                )
