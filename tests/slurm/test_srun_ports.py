"""srun and salloc on the portal listen only inside the SrunPortRange the portal's NSG opens: the portal's join
script, as rendered, run for real on a /sched holding the local test cluster's slurm.conf, then real Slurm 22.05
(Debian's slurm-wlm) srun and salloc reading the slurm.conf the script wrote, and the ports their processes listen on
read back with ss(8). Without the line the same cluster
gave srun ephemeral ports 35429, 37657, 44083, 45817 and salloc 45721 (captured 2026-11-27, Slurm 22.05.8), so
salloc's listener, which takes slurmctld's messages ("create message thread to handle pings and such from
slurmctld", SchedMD/slurm src/salloc/salloc.c), follows SrunPortRange as srun's do."""

from __future__ import annotations

import getpass
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hpclz.render.nsg import SRUN_PORTS
from tests.render.test_portal import _join_script
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm

slurm_cluster = harness.slurm_cluster

POLL_S = 90.0  # how long to wait for the command to start listening (a shared, loaded machine); a bound only


def _portal_conf(cluster: LocalSlurm, tmp_path: Path) -> Path:
    """/etc/slurm/slurm.conf as hpclz-portal-join writes it, for a cluster whose slurm.conf is the test cluster's."""
    join = _join_script(tmp_path)
    sched = tmp_path / "sched" / "aitrain-prod"
    sched.mkdir(parents=True)
    (sched / "munge.key").write_bytes(bytes(range(256)) * 4)
    (sched / "slurm.conf").write_text(cluster.conf.read_text(encoding="utf-8"), encoding="utf-8")
    done = subprocess.run(["bash", str(join)], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return tmp_path / "etc" / "slurm" / "slurm.conf"


def _listening(pid: int) -> set[int]:
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True, timeout=15).stdout
    return {int(m.group(1)) for m in re.finditer(rf"\S+:(\d+)\s+\S+\s+users:\(\(\"\w+\",pid={pid},", out)}


@pytest.mark.parametrize("command", [["srun", "-N1", "sleep", "300"], ["salloc", "-N1", "sleep", "300"]])
def test_srun_and_salloc_listen_inside_the_pinned_range(
    slurm_cluster: LocalSlurm,
    tmp_path: Path,
    command: list[str],
) -> None:
    conf = _portal_conf(slurm_cluster, tmp_path)
    assert f"SrunPortRange={SRUN_PORTS[0]}-{SRUN_PORTS[1]}" in conf.read_text(encoding="utf-8").splitlines()
    env = {**slurm_cluster.env, "SLURM_CONF": str(conf)}
    # Its own session, so cleanup reaches the command salloc runs too; salloc itself does not stop on SIGTERM.
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path, start_new_session=True
    )
    try:
        ports: set[int] = set()
        deadline = time.monotonic() + POLL_S
        while not ports and process.poll() is None and time.monotonic() < deadline:
            ports = _listening(process.pid)
            time.sleep(0.2)
        assert ports, f"{command[0]} never listened (exit {process.poll()})"
        assert all(SRUN_PORTS[0] <= p <= SRUN_PORTS[1] for p in ports), ports
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        slurm_cluster.client("scancel", "--user", getpass.getuser())
