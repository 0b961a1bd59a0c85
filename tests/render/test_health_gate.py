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

from hpclz.render.health_gate import GATE_SCRIPT, GATE_STAMP, HEALTH_PROGRAM, PROLOG_EPILOG_TIMEOUT_S, health_gate
from tests.conftest import require
from tests.render.test_cloudinit import _artifacts, _scripts
from tests.support.slurm import slurm_available, start_cluster, stop_cluster
from tests.support.slurm_power import wait_until
from tests.verify.helpers import GOOD

PRESETS = ("ai-training", "energy")
# compute.partitions[].idle_shutdown_minutes, the shortest, in each preset (configs/*.yaml): none in ai-training.
IDLE_MINUTES = {"ai-training": None, "energy": 15}
# What azure-slurm-install/templates/slurm.conf.template @50e6739 writes before the appended lines, with healthagent
# on (lines 47, 52, 59-63; install.py:521-522 for the interval and program).
STOCK = [
    "SuspendTime=300",
    "SchedulerParameters=max_switch_wait=24:00:00",
    "HealthCheckInterval=60",
    "HealthCheckNodeState=ANY",
    "HealthCheckProgram=/sched/{cluster}/health.sh",
]


def _cluster(stem: str) -> tuple[str, dict[str, str]]:
    artifacts = _artifacts(stem)
    return artifacts["cyclecloud/slurm-cluster.txt"], json.loads(artifacts["cyclecloud/slurm-params.json"])


def _heredoc(script: str, path: str) -> str:
    [body] = re.findall(rf"cat > {re.escape(path)} <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", script, re.S | re.M)
    return str(body)


def _scheduler(stem: str) -> str:
    (scheduler,) = [s for s in _scripts(_cluster(stem)[0]) if "hpclz on the Slurm scheduler node" in s]
    return scheduler


def _installer(stem: str) -> str:
    return _heredoc(_scheduler(stem), "/opt/hpclz/bin/hpclz-gate-install")


def _health_programs(stem: str) -> list[str]:
    """Every execute node's HealthCheckProgram, one per nodearray."""
    nodes = [s for s in _scripts(_cluster(stem)[0]) if "hpclz node setup for Slurm partition" in s]
    assert nodes
    return [_heredoc(node, HEALTH_PROGRAM) for node in nodes]


def _install(tmp_path: Path, stem: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The rendered installer run against a scratch /sched, as the timer runs it."""
    sched = tmp_path / "sched"
    script = tmp_path / "hpclz-gate-install"
    script.write_text(_installer(stem))
    env = {
        **os.environ,
        "HPCLZ_SCHED": str(sched),
        "HPCLZ_PYTHON": sys.executable,
        "HPCLZ_STAMP": str(tmp_path / "stamp/gate-installed"),
    }
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120, check=False)
    return sched, done


@pytest.mark.parametrize("stem", PRESETS)
def test_the_cluster_hands_its_slurm_lines_to_cyclecloud_slurm(stem: str) -> None:
    template, parameters = _cluster(stem)
    assert "        slurm.additional.config = $HpclzSlurmConfig\n" in template
    gate = health_gate(re.search(r"^\[cluster (.+)\]$", template, re.M).group(1))  # type: ignore[union-attr]
    # The gate's lines alone: the job credential adds none (no TaskProlog, tests/render/test_job_storage.py).
    assert parameters["HpclzSlurmConfig"] == gate.slurm_conf(IDLE_MINUTES[stem])
    assert "PathExists=" not in "".join(_scripts(template))


@pytest.mark.parametrize("stem", PRESETS)
def test_the_idle_time_is_slurms_suspendtime_not_a_setting_cyclecloud_slurm_ignores(stem: str) -> None:
    """cyclecloud-slurm 4.0.9 reads no cyclecloud.cluster.autoscale.idle_time_after_jobs (no occurrence in
    Azure/cyclecloud-slurm@50e6739) and hard-codes SuspendTime=300 (templates/slurm.conf.template l.47): the idle
    time reaches Slurm only as a SuspendTime line appended after the template's."""
    template, parameters = _cluster(stem)
    assert "idle_time_after_jobs =" not in template
    suspend = re.findall(r"^SuspendTime=(\d+)$", parameters["HpclzSlurmConfig"], re.M)
    minutes = IDLE_MINUTES[stem]
    assert suspend == ([str(minutes * 60)] if minutes else [])
    # The template's comment says where the value is, and the same value.
    said = re.findall(r"^        # SuspendTime=(\d+) \(compute\.partitions' shortest", template, re.M)
    assert said == suspend
    assert ("cyclecloud-slurm's SuspendTime=300 stands" in template) == (not minutes)


@pytest.mark.parametrize("stem", PRESETS)
def test_a_timer_starts_the_installer_until_it_is_done(stem: str) -> None:
    """cyclecloud-slurm mounts /sched after the scheduler's cloud-init: a path unit armed then would watch the local
    folder the mount hides (systemd.path(5), inotify), so a timer starts the installer every minute (systemd.timer(5))
    and the installer decides; each cloud-init run removes the stamp, so a new scheduler VM installs its own budgets
    (a new wheel on a running scheduler: test_install_wheel.py::test_a_new_wheel_reaches_the_health_gate)."""
    scheduler = _scheduler(stem)
    timer = _heredoc(scheduler, "/etc/systemd/system/hpclz-gate-install.timer")
    assert "OnBootSec=1min\nOnUnitActiveSec=1min\n" in timer and "WantedBy=timers.target" in timer
    assert "systemctl enable --now hpclz-gate-install.timer\n" in scheduler
    assert f"rm -f {GATE_STAMP}\n" in scheduler
    service = _heredoc(scheduler, "/etc/systemd/system/hpclz-gate-install.service")
    assert "ExecStart=/opt/hpclz/bin/hpclz-gate-install\n" in service


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
            conf.write("\n".join(line.format(cluster="ai-training") for line in STOCK) + "\n" + gate.slurm_conf(15))
        log = cluster.root / "log" / "slurmctld.log"
        logged = len(log.read_text())
        cluster.client("scontrol", "reconfigure")
        shown = dict(
            (key.strip(), value.strip())
            for key, _, value in (
                line.partition("=") for line in cluster.client("scontrol", "show", "config").splitlines()
            )
        )

        # What the reconfigure logged: Slurm's "<key> specified more than once, latest value used" (parse_config.c)
        # for each repeated key. The harness's own SchedulerParameters line is a third one of that key.
        # Slurm 22.05 writes it as "error: SuspendTime 1 specified more than once, latest value used".
        def repeats() -> set[str]:
            return set(re.findall(r"error: (\w+) \d+ specified more than once", log.read_text()[logged:]))

        wait_until(lambda: "SchedulerParameters" in repeats(), "slurmctld's reconfigure logged")
        repeated = repeats()
    finally:
        stop_cluster(cluster)
    # The keys cyclecloud-slurm gives hpclz no setting for (hpclz.render.health_gate.HealthGate.slurm_conf); no
    # HealthCheckNodeState, whose stock value is hpclz's.
    assert repeated == {"HealthCheckProgram", "HealthCheckInterval", "SchedulerParameters", "SuspendTime"}
    assert shown["SchedulerParameters"] == "max_switch_wait=24:00:00,nohold_on_prolog_fail"
    assert shown["PrologEpilogTimeout"] == str(PROLOG_EPILOG_TIMEOUT_S)
    assert shown["HealthCheckProgram"] == HEALTH_PROGRAM
    assert (shown["HealthCheckInterval"], shown["HealthCheckNodeState"]) == ("60 sec", "ANY")
    # The partitions' shortest idle time, 15 minutes, over the template's SuspendTime=300.
    assert shown["SuspendTime"] == "900 sec"


def test_the_installer_waits_for_cyclecloud_slurms_prolog_folder_then_installs_once(tmp_path: Path) -> None:
    """Before cyclecloud-slurm has mounted /sched and made prolog.d (install.py:506-507) the timer's run writes
    nothing and succeeds; once the folder is there it installs and leaves its stamp; the next runs do nothing."""
    (tmp_path / "sched").mkdir()
    sched, done = _install(tmp_path, "ai-training")
    assert (done.returncode, list(sched.iterdir())) == (0, []), done.stderr
    assert f"waiting for cyclecloud-slurm's {sched}/prolog.d" in done.stdout
    assert not (tmp_path / "stamp").exists()
    (sched / "prolog.d").mkdir()
    sched, done = _install(tmp_path, "ai-training")
    assert done.returncode == 0 and (tmp_path / "stamp/gate-installed").is_file(), done.stderr
    (sched / "hpclz/passive.sh").unlink()
    sched, done = _install(tmp_path, "ai-training")
    assert (done.returncode, done.stdout) == (0, "") and not (sched / "hpclz/passive.sh").exists()


def test_the_installer_writes_the_gate_and_its_prolog_passes_a_healthy_node(tmp_path: Path) -> None:
    (tmp_path / "sched/prolog.d").mkdir(parents=True)
    sched, done = _install(tmp_path, "ai-training")
    assert done.returncode == 0, done.stdout + done.stderr
    prolog, epilog, passive = (
        sched / "prolog.d" / GATE_SCRIPT,
        sched / "epilog.d" / GATE_SCRIPT,
        sched / "hpclz/passive.sh",
    )
    for path in (prolog, epilog, passive, sched / "hpclz/hpclz-node.pyz"):
        assert path.is_file() and os.access(path, os.X_OK), path
    assert not list(sched.rglob("*.new"))
    # As slurmd runs it: its own environment, SLURM_JOB_GPUS for the job's share; the node reads the healthy fixture.
    job = {**os.environ, "SLURMD_NODENAME": "n1", "SLURM_JOB_GPUS": "0,1,2,3", "HPCLZ_VERIFY_FIXTURES": str(GOOD)}
    ran = subprocess.run(["bash", str(prolog)], env=job, capture_output=True, text=True, timeout=120, check=False)
    assert (ran.returncode, ran.stdout.strip()) == (0, "hpclz gate prolog: n1 healthy"), ran.stderr


def _healthagent(sched: Path, marker: Path) -> None:
    """healthagent's health.sh where cyclecloud-slurm installs it (install.py:522), failing."""
    sched.mkdir(parents=True, exist_ok=True)
    (sched / "health.sh").write_text(f"#!/bin/bash\necho ran > {marker}\nexit 1\n")
    (sched / "health.sh").chmod(0o755)


def _run_health_program(tmp_path: Path, stem: str, sched: Path) -> subprocess.CompletedProcess[str]:
    program = tmp_path / "hpclz-health"
    bodies = set(_health_programs(stem))
    assert len(bodies) == 1  # the same program on every nodearray
    program.write_text(bodies.pop())
    node = {**os.environ, "SLURMD_NODENAME": "n2", "HPCLZ_VERIFY_FIXTURES": str(GOOD), "HPCLZ_SCHED": str(sched)}
    return subprocess.run(["bash", str(program)], env=node, capture_output=True, text=True, timeout=120, check=False)


# The installed passive tier keeps its failing-streak memory where a node keeps it, /var/tmp/hpclz-gate/gate-n2.json
# (hpclz.verify.gate DEFAULT_STATE), through one fixed gate-n2.tmp: one pytest-xdist worker runs these.
@pytest.mark.xdist_group("var-tmp-hpclz-gate")
@pytest.mark.parametrize("stem", PRESETS)
def test_the_health_program_runs_healthagents_check_first_then_hpclzs(tmp_path: Path, stem: str) -> None:
    """One HealthCheckProgram for both: healthagent's health.sh as cyclecloud-slurm installs it, then hpclz's
    passive tier, whatever healthagent's exits with."""
    (tmp_path / "sched/prolog.d").mkdir(parents=True)
    sched, done = _install(tmp_path, stem)
    assert done.returncode == 0, done.stderr
    marker = tmp_path / "healthagent.ran"
    _healthagent(sched, marker)
    ran = _run_health_program(tmp_path, stem, sched)
    assert marker.read_text() == "ran\n"
    assert (ran.returncode, ran.stdout.strip()) == (0, "hpclz gate passive: n2 healthy"), ran.stderr


def test_without_hpclzs_gate_the_health_program_still_runs_healthagents_check(tmp_path: Path) -> None:
    """The gate not (yet) installed under /sched: Slurm's HealthCheckProgram, on the node's own disk, still exists and
    runs healthagent's check, as cyclecloud-slurm's own HealthCheckProgram would."""
    sched, marker = tmp_path / "sched", tmp_path / "healthagent.ran"
    _healthagent(sched, marker)
    ran = _run_health_program(tmp_path, "ai-training", sched)
    assert (ran.returncode, ran.stdout, marker.read_text()) == (0, "", "ran\n"), ran.stderr
    # Nor does it fail where /sched has nothing at all (healthagent off, gate not installed).
    ran = _run_health_program(tmp_path, "energy", tmp_path / "empty")
    assert (ran.returncode, ran.stdout) == (0, ""), ran.stderr


def test_a_prolog_without_its_bundle_lets_the_job_run(tmp_path: Path) -> None:
    """A node where the gate is not (yet) installed must not fail jobs: slurmd drains a node whose Prolog exits
    non-zero and requeues the job (slurm.conf(5), Prolog)."""
    (tmp_path / "sched/prolog.d").mkdir(parents=True)
    sched, done = _install(tmp_path, "ai-training")
    assert done.returncode == 0, done.stderr
    (sched / "hpclz/hpclz-node.pyz").unlink()
    ran = subprocess.run(["bash", str(sched / "prolog.d" / GATE_SCRIPT)], capture_output=True, text=True, check=False)
    assert (ran.returncode, ran.stderr.strip()) == (0, "hpclz gate: not installed, job not gated")
