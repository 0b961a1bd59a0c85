"""`hpclz plan`: validate, then hpclz.deploy.planning says what an apply would do and cost (and saves it)."""

from __future__ import annotations

from hpclz.config.loader import load_config
from hpclz.deploy.planning import PlanOptions, PlanResult, planned
from hpclz.outfile import check_out_file
from hpclz.output import CommandResult
from hpclz.services.validate import check_config

__all__ = ["PlanOptions", "PlanResult", "plan"]


def plan(opts: PlanOptions) -> CommandResult[PlanResult]:
    if opts.out is not None:  # before any work: a refused --out must not cost a what-if call
        check_out_file(opts.out, inputs=[opts.config], force=opts.force)
    loaded = load_config(opts.config)
    findings, _ = check_config(loaded, opts.suppress)
    result = planned(loaded, opts, findings)
    return CommandResult(command="plan", payload=result, findings=result.findings, exit_code=result.exit_code())
