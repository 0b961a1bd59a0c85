"""`hpclz deploy`: validate, then the deploy engine (hpclz.deploy.apply) renders, preflights and applies."""

from __future__ import annotations

from hpclz.config.loader import load_config
from hpclz.deploy.apply import DeployOptions, DeployResult, apply
from hpclz.output import CommandResult
from hpclz.services.validate import check_config

__all__ = ["DeployOptions", "DeployResult", "deploy"]


def deploy(opts: DeployOptions) -> CommandResult[DeployResult]:
    loaded = load_config(opts.config)
    findings, _ = check_config(loaded, opts.suppress)
    result, code = apply(loaded, opts, findings)
    return CommandResult(
        command="deploy", payload=result, findings=result.findings, errors=result.errors(), exit_code=code
    )
