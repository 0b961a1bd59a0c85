"""`hpclz destroy`: load the config, then hpclz.deploy.teardown deletes what the state says hpclz created."""

from __future__ import annotations

from hpclz.config.loader import load_config
from hpclz.deploy.teardown import DestroyOptions, DestroyResult, tear_down
from hpclz.output import CommandResult

__all__ = ["DestroyOptions", "DestroyResult", "destroy"]


def destroy(opts: DestroyOptions) -> CommandResult[DestroyResult]:
    result, code = tear_down(load_config(opts.config), opts)
    return CommandResult(command="destroy", payload=result, exit_code=code)
