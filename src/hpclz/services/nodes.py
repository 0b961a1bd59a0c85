"""`hpclz nodes roll|status`: load the config, then hpclz.slurm.roll does it through Slurm here, or on the scheduler
VM through Azure Run Command (hpclz.azure.remote_nodes), which it is handed so that Slurm never imports Azure."""

from __future__ import annotations

from typing import Any

from hpclz.config.loader import LoadedConfig, load_config
from hpclz.output import CommandResult
from hpclz.slurm import roll as engine
from hpclz.slurm.roll import NodesOptions, NodesResult, There

__all__ = ["NodesOptions", "NodesResult", "roll", "status"]


def roll(opts: NodesOptions) -> CommandResult[NodesResult]:
    loaded = load_config(opts.config)
    return _wrap(engine.roll(loaded, opts, _there(loaded, opts)))


def status(opts: NodesOptions) -> CommandResult[NodesResult]:
    loaded = load_config(opts.config)
    return _wrap(engine.status(loaded, opts, _there(loaded, opts)))


def _wrap(result: NodesResult) -> CommandResult[NodesResult]:
    return CommandResult(command=f"nodes {result.action}", payload=result, exit_code=result.exit_code())


def _there(loaded: LoadedConfig, opts: NodesOptions) -> There:
    """The trip to the scheduler VM, imported only when taken."""

    def run(args: list[str]) -> dict[str, Any]:
        from hpclz.azure.remote_nodes import Scheduler, run_on_scheduler

        where = Scheduler(opts.scheduler, opts.report_account, opts.remote_python, opts.wait_s, opts.progress)
        return run_on_scheduler(loaded, args, where)

    return run
