"""srun and salloc listen only inside the SrunPortRange hpclz pins for the portal, as the portal's NSG assumes:
real Slurm 22.05 (Debian's slurm-wlm) commands run against the local test cluster with the rendered line added to
their slurm.conf, and the ports their processes listen on read back with ss(8). Without the line the same cluster
gave srun ephemeral ports 35429, 37657, 44083, 45817 and salloc 45721 (captured 2026-11-27, Slurm 22.05.8), so
salloc's listener, which takes slurmctld's messages ("create message thread to handle pings and such from
slurmctld", salloc.c), follows SrunPortRange as srun's do."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from hpclz.render.nsg import SRUN_PORTS
from tests.render.conftest import preset_plan
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm

slurm_cluster = harness.slurm_cluster

POLL_S = 30.0  # how long to wait for the command to start listening; a bound, not a measured time


def _pinned_line() -> str:
    """The SrunPortRange line the ai-training preset hands cyclecloud-slurm (slurm.additional.config)."""
    compute = next(d for d in preset_plan("ai-training").deployments if "cyclecloud/slurm-params.json" in d.artifacts)
    conf = json.loads(compute.artifacts["cyclecloud/slurm-params.json"])["HpclzSlurmConfig"]
    (line,) = [x for x in conf.splitlines() if x.startswith("SrunPortRange=")]
    return line


def _listening(pid: int) -> set[int]:
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True, timeout=15).stdout
    return {int(m.group(1)) for m in re.finditer(rf"\S+:(\d+)\s+\S+\s+users:\(\(\"\w+\",pid={pid},", out)}


@pytest.mark.parametrize("command", [["srun", "-N1", "sleep", "20"], ["salloc", "-N1", "sleep", "20"]])
def test_srun_and_salloc_listen_inside_the_pinned_range(
    slurm_cluster: LocalSlurm,
    tmp_path: Path,
    command: list[str],
) -> None:
    line = _pinned_line()
    assert line == f"SrunPortRange={SRUN_PORTS[0]}-{SRUN_PORTS[1]}"
    conf = tmp_path / "slurm.conf"
    conf.write_text(slurm_cluster.conf.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    env = {**slurm_cluster.env, "SLURM_CONF": str(conf)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        ports: set[int] = set()
        deadline = time.monotonic() + POLL_S
        while not ports and process.poll() is None and time.monotonic() < deadline:
            ports = _listening(process.pid)
            time.sleep(0.2)
        assert ports, f"{command[0]} never listened: {process.stderr.read().decode() if process.stderr else ''}"
        assert all(SRUN_PORTS[0] <= p <= SRUN_PORTS[1] for p in ports), ports
    finally:
        process.terminate()
        process.wait(timeout=30)
