"""Where a Slurm command runs: through this machine's Slurm, or on the scheduler VM through Azure Run Command."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hpclz.errors import HpclzError
from hpclz.slurm.client import slurm_here

# hpclz on the rendered scheduler: hpclz-install-wheel makes a venv per wheel under /opt/hpclz/venvs and links
# /opt/hpclz/venv to the one in use (templates/cloud-init/install_wheel.sh.j2), and the scheduler's cloud-init links
# /usr/local/bin/hpclz to its hpclz (templates/cloud-init/scheduler.sh.j2). The system python3 has no hpclz, and the
# compute nodes have neither: they get only the node bundle under /sched (hpclz.render.health_gate).
SCHEDULER_PYTHON = "/opt/hpclz/venv/bin/python"


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
