"""`hpclz state show|unlock|forget|adopt`: each calls one entry point of hpclz.deploy.state_edits and wraps its result."""

from __future__ import annotations

from hpclz.deploy.state_edits import (
    AdoptResult,
    ForgetResult,
    StateOptions,
    StateShowResult,
    UnlockResult,
    adopt,
    forget,
    show,
    unlock,
)
from hpclz.output import CommandResult

__all__ = ["AdoptResult", "ForgetResult", "StateOptions", "StateShowResult", "UnlockResult"]


def show_state(opts: StateOptions) -> CommandResult[StateShowResult]:
    return CommandResult(command="state show", payload=show(opts))


def unlock_state(opts: StateOptions) -> CommandResult[UnlockResult]:
    return CommandResult(command="state unlock", payload=unlock(opts))


def forget_state(opts: StateOptions) -> CommandResult[ForgetResult]:
    return CommandResult(command="state forget", payload=forget(opts))


def adopt_state(opts: StateOptions) -> CommandResult[AdoptResult]:
    return CommandResult(command="state adopt", payload=adopt(opts))
