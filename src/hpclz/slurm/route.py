"""Where a Slurm command runs: through this machine's Slurm, or on the scheduler VM through Azure Run Command."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hpclz.errors import HpclzError
from hpclz.slurm.client import slurm_here


def through_run_command(via: str | None, scheduler: str | None, slurm_conf: Path | None) -> bool:
    """On the scheduler when asked, or when this machine has no Slurm to talk to (where `hpclz deploy` ran)."""
    if via is not None:
        return via == "run-command"
    return scheduler is not None or not slurm_here(slurm_conf)


@contextmanager
def azure_explained(what: str, via: str | None, scheduler: str | None) -> Iterator[None]:
    """An error of a run nobody asked to send to Azure says why it went there."""
    try:
        yield
    except HpclzError as exc:
        if via is None and scheduler is None and exc.hint is None:
            exc.hint = (
                f"no Slurm here (sinfo not on PATH), so {what} went to the scheduler VM through Azure Run Command; "
                "--slurm-conf FILE uses a Slurm here"
            )
        raise
