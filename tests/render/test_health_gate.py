"""The health gate as the rendered cluster installs it (hpclz.render.health_gate): the slurm.conf lines
cyclecloud-slurm appends, read by a real slurmctld after the stock lines they follow; the installer the scheduler's
cloud-init writes, run for real; the prolog it installs, run from the bundle as a node runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hpclz.render.health_gate import GATE_SCRIPT, PROLOG_EPILOG_TIMEOUT_S, health_gate
from tests.conftest import require
from tests.render.test_cloudinit import _artifacts, _scripts
from tests.support.slurm import slurm_available, start_cluster, stop_cluster
from tests.verify.helpers import GOOD

PRESETS = ("ai-training", "energy")
# What azure-slurm-install/templates/slurm.conf.template @50e6739 writes before the appended lines, with healthagent
# on (lines 52, 59-63; install.py:521-522 for the interval and program).
STOCK = [
    "SchedulerParameters=max_switch_wait=24:00:00",
    "HealthCheckInterval=60",
    "HealthCheckNodeState=ANY",
    "HealthCheckProgram=/sched/{cluster}/health.sh",
]


def _cluster(stem: str) -> tuple[str, dict[str, str]]:
    artifacts = _artifacts(stem)
    return artifacts["cyclecloud/slurm-cluster.txt"], json.loads(artifacts["cyclecloud/slurm-params.json"])


def _installer(stem: str) -> str:
    (scheduler,) = [s for s in _scripts(_cluster(stem)[0]) if "hpclz on the Slurm scheduler node" in s]
    [body] = re.findall(
        r"cat > /opt/hpclz/bin/hpclz-gate-install <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", scheduler, re.S | re.M
    )
    return str(body)


@pytest.mark.parametrize("stem", PRESETS)
def test_the_cluster_hands_its_slurm_lines_to_cyclecloud_slurm(stem: str) -> None:
    template, parameters = _cluster(stem)
    assert "        slurm.additional.config = $HpclzSlurmConfig\n" in template
    gate = health_gate(re.search(r"^\[cluster (.+)\]$", template, re.M).group(1))  # type: ignore[union-attr]
    assert parameters["HpclzSlurmConfig"] == gate.slurm_conf()
    assert f"PathExists={gate.sched}/prolog.d" in "".join(_scripts(template))


def test_slurmctld_keeps_the_appended_lines_over_the_stock_ones(tmp_path: Path) -> None:
    """cyclecloud-slurm appends slurm.additional.config after its template (install.py:588-592): a real slurmctld
    must end with hpclz's values, the stock max_switch_wait kept, nohold_on_prolog_fail added."""
    require(slurm_available(), "Slurm (slurmctld, slurmd, munged, sinfo)")
    gate = health_gate("Ai Training")
    assert gate.sched == "/sched/ai-training"  # install.py:175-176: lower case, other characters "-"
    cluster = start_cluster(["h1"])
    try:
        cluster.wait_idle()
        with cluster.conf.open("a") as conf:
            conf.write("\n".join(line.format(cluster="ai-training") for line in STOCK) + "\n" + gate.slurm_conf())
        cluster.client("scontrol", "reconfigure")
        shown = dict(
            (key.strip(), value.strip())
            for key, _, value in (
                line.partition("=") for line in cluster.client("scontrol", "show", "config").splitlines()
            )
        )
    finally:
        stop_cluster(cluster)
    assert shown["SchedulerParameters"] == "max_switch_wait=24:00:00,nohold_on_prolog_fail"
    assert shown["PrologEpilogTimeout"] == str(PROLOG_EPILOG_TIMEOUT_S)
    assert shown["HealthCheckProgram"] == "/sched/ai-training/hpclz/health.sh"
    assert (shown["HealthCheckInterval"], shown["HealthCheckNodeState"]) == ("60 sec", "ANY")


def test_the_installer_writes_the_gate_and_its_prolog_passes_a_healthy_node(tmp_path: Path) -> None:
    sched = tmp_path / "sched"
    (sched / "prolog.d").mkdir(parents=True)
    script = tmp_path / "hpclz-gate-install"
    script.write_text(_installer("ai-training"))
    env = {**os.environ, "HPCLZ_SCHED": str(sched), "HPCLZ_PYTHON": sys.executable}
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    prolog, epilog, health = (
        sched / "prolog.d" / GATE_SCRIPT,
        sched / "epilog.d" / GATE_SCRIPT,
        sched / "hpclz/health.sh",
    )
    for path in (prolog, epilog, health, sched / "hpclz/hpclz-node.pyz"):
        assert path.is_file() and os.access(path, os.X_OK), path
    assert not list(sched.rglob("*.new"))
    assert f'"{sched}/health.sh"' in health.read_text()  # healthagent's check runs first
    # As slurmd runs it: its own environment, SLURM_JOB_GPUS for the job's share; the node reads the healthy fixture.
    job = {**os.environ, "SLURMD_NODENAME": "n1", "SLURM_JOB_GPUS": "0,1,2,3", "HPCLZ_VERIFY_FIXTURES": str(GOOD)}
    ran = subprocess.run(["bash", str(prolog)], env=job, capture_output=True, text=True, timeout=120, check=False)
    assert (ran.returncode, ran.stdout.strip()) == (0, "hpclz gate prolog: n1 healthy"), ran.stderr


def test_the_health_program_runs_healthagents_check_first_then_hpclzs(tmp_path: Path) -> None:
    """One HealthCheckProgram for both: healthagent's health.sh as cyclecloud-slurm installs it, then hpclz's
    passive tier, whatever healthagent's exits with."""
    sched = tmp_path / "sched"
    (sched / "prolog.d").mkdir(parents=True)
    script = tmp_path / "hpclz-gate-install"
    script.write_text(_installer("energy"))
    env = {**os.environ, "HPCLZ_SCHED": str(sched), "HPCLZ_PYTHON": sys.executable}
    subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120, check=True)
    marker = tmp_path / "healthagent.ran"
    (sched / "health.sh").write_text(f"#!/bin/bash\necho ran > {marker}\nexit 1\n")
    (sched / "health.sh").chmod(0o755)
    node = {**os.environ, "SLURMD_NODENAME": "n2", "HPCLZ_VERIFY_FIXTURES": str(GOOD)}
    argv = ["bash", str(sched / "hpclz/health.sh")]
    ran = subprocess.run(argv, env=node, capture_output=True, text=True, timeout=120, check=False)
    assert marker.read_text() == "ran\n"
    assert (ran.returncode, ran.stdout.strip()) == (0, "hpclz gate passive: n2 healthy"), ran.stderr


def test_a_prolog_without_its_bundle_lets_the_job_run(tmp_path: Path) -> None:
    """A node where the gate is not (yet) installed must not fail jobs: slurmd drains a node whose Prolog exits
    non-zero and requeues the job (slurm.conf(5), Prolog)."""
    sched = tmp_path / "sched"
    (sched / "prolog.d").mkdir(parents=True)
    script = tmp_path / "hpclz-gate-install"
    script.write_text(_installer("ai-training"))
    env = {**os.environ, "HPCLZ_SCHED": str(sched), "HPCLZ_PYTHON": sys.executable}
    subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120, check=True)
    (sched / "hpclz/hpclz-node.pyz").unlink()
    ran = subprocess.run(["bash", str(sched / "prolog.d" / GATE_SCRIPT)], capture_output=True, text=True, check=False)
    assert (ran.returncode, ran.stderr.strip()) == (0, "hpclz gate: not installed, job not gated")
