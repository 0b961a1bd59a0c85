"""SLURM_JOB_END_TIME as a real slurmd of Slurm 24.11 hands it to the Prolog, and hpclz-job-storage's SAS made from it.

Debian 12's slurmd is 22.05, which hands a Prolog no end (tests/slurm/test_job_storage_slurm.py runs the rendered
prolog there); Slurm 23.02 and later do (SchedMD/slurm commit 23c4516b7e). The trixie chroot (tests/support/
trixie_slurm.py) runs Slurm 24.11 but has no python3 for the program, so its Prolog, a shell script, keeps the
environment slurmd gave it, and the program then runs here with those SLURM_* variables, as slurmd would run it.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest

from tests.conftest import require
from tests.render.test_job_storage import (
    _config,
    _run,
    _sas,
    _time,
    azure,  # noqa: F401  (a fixture, used by name)
)
from tests.support import trixie_slurm
from tests.support.user_delegation import DelegationStandIn

pytestmark = pytest.mark.slurm
PROLOG = f"#!/bin/sh\nenv > {trixie_slurm.INSIDE}/log/prolog-env-$SLURM_JOB_ID.part\n"
PROLOG += (
    f"mv {trixie_slurm.INSIDE}/log/prolog-env-$SLURM_JOB_ID.part {trixie_slurm.INSIDE}/log/prolog-env-$SLURM_JOB_ID\n"
)


def _prolog_env(cluster: trixie_slurm.TrixieSlurm, *sbatch: str) -> dict[str, str]:
    """The environment slurmd 24.11 gave the Prolog of a job submitted with `sbatch`, which is then cancelled."""
    job = cluster.client.run("sbatch", "--parsable", "-o", "/dev/null", *sbatch, "--wrap", "sleep 300").strip()
    path = cluster.folder / "log" / f"prolog-env-{job}"
    try:
        cluster.wait_for(path.exists, f"job {job}'s prolog", 60)
    finally:
        cluster.client.run("scancel", job)
    cluster.wait_for(lambda: not cluster.client.run("squeue", "-h", "-j", job, "-o", "%T").strip(), f"job {job} gone")
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line.startswith("SLURM_"))


def test_the_sas_ends_with_the_job_slurmd_24_11_describes(
    tmp_path: Path,
    azure: str,  # noqa: F811
) -> None:
    trixie_slurm.require_trixie()
    require(os.geteuid() == 0, "root (the prolog hands the job's folder to its user)")
    with trixie_slurm.running(["e1"], "debug", "", site_specific=True, prolog=PROLOG) as cluster:
        limited = _prolog_env(cluster, "--time=10")
        unlimited = _prolog_env(cluster)
    # The job's end as a UNIX time: its start plus its time limit, or a year for a job without one (the partition's
    # MaxTime=INFINITE; src/slurmctld/job_mgr.c job_end_time_reset).
    for env, limit in ((limited, datetime.timedelta(minutes=10)), (unlimited, datetime.timedelta(days=365))):
        assert env["SLURM_JOB_END_TIME"].isdigit() and env["SLURM_JOB_START_TIME"].isdigit(), env
        assert int(env["SLURM_JOB_END_TIME"]) - int(env["SLURM_JOB_START_TIME"]) == limit.total_seconds()
    config = _config(tmp_path)
    job = limited["SLURM_JOB_ID"]
    done = _run("prolog", config, azure, job, **limited)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    end = datetime.datetime.fromtimestamp(int(limited["SLURM_JOB_END_TIME"]), datetime.UTC)
    assert _time(_sas(tmp_path / f"run/hpclz/jobs/{job}/checkpoints.sas")["se"]) == end + datetime.timedelta(minutes=15)
    # A job without a time limit: its SAS ends with the key that signs it (a week at most), renewed after.
    job = unlimited["SLURM_JOB_ID"]
    assert _run("prolog", config, azure, job, **unlimited).returncode == 0
    [key] = DelegationStandIn.keys
    assert _sas(tmp_path / f"run/hpclz/jobs/{job}/checkpoints.sas")["se"].replace("%3A", ":") == key["SignedExpiry"]
