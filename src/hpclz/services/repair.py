"""`hpclz nodes repair|incidents`: load the config, then hpclz.remediate.session runs one pass of closed-loop repair
(or reads where it stands)."""

from __future__ import annotations

from hpclz.config.loader import load_config
from hpclz.errors import ExitCode
from hpclz.output import CommandResult
from hpclz.remediate.session import IncidentsOptions, RepairOptions, RepairResult, read_incidents, repair_pass

__all__ = ["IncidentsOptions", "RepairOptions", "RepairResult", "incidents", "repair"]


def repair(opts: RepairOptions) -> CommandResult[RepairResult]:
    return CommandResult(
        command="nodes repair", payload=repair_pass(load_config(opts.config), opts), exit_code=ExitCode.OK
    )


def incidents(opts: IncidentsOptions) -> CommandResult[RepairResult]:
    return CommandResult(command="nodes incidents", payload=read_incidents(opts), exit_code=ExitCode.OK)
