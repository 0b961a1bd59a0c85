"""What Slurm's power saving, set up as cyclecloud-slurm sets it up (tests/support/slurm_power.py, with
`SlurmctldParameters=idle_on_node_suspend`: Azure/cyclecloud-slurm@50e6739 azure-slurm-install/templates/
slurm.conf.template l.24), does to drained nodes and to nodes whose VMs went away behind Slurm's back, on the real
Slurm 22.05.8 daemons. docs/node-health.md and docs/patching.md rely on it.

- An idle node is powered down once idle for SuspendTime whether drained or not ("Nodes which remain idle or down for
  this number of seconds will be placed into power save mode", slurm.conf(5) 22.05, SuspendTime; SuspendExcStates,
  which could keep DRAIN nodes up, exists from Slurm 23.02 and by default keeps none: "By default, any of these
  states, if idle for SuspendTime, would be powered down", SchedMD/slurm@284c3b9 doc/man/man5/slurm.conf.5
  l.6461-6466), and idle_on_node_suspend clears its drain ("Mark nodes as idle, regardless of current state, when
  suspending nodes", slurm.conf(5); SchedMD/slurm slurm-22-05-8-1 src/slurmctld/power_save.c l.510-519 clears DRAIN
  and FAIL): the drain ends with the VM, and the next job gets the node created again.
- A node kept out of power saving (SuspendExcNodes: CycleCloud's keep-alive nodes; a partition with
  SuspendTime=INFINITE) stays drained, and when its VM goes it stays DOWN: never POWERED_DOWN, so cyclecloud-slurm's
  `azslurm return_to_idle`, which looks only at POWERED_DOWN cloud nodes (Azure/cyclecloud-slurm@50e6739
  azure-slurm/slurmcc/cli.py l.469-476), never gives it back either.
- `State=POWER_DOWN_FORCE` ("Will cancel all jobs on the node, power it down, and reset its state to IDLE",
  scontrol(1)) powers down every node named, those kept out of power saving included, and a controller started again
  from the saved state finds them all IDLE+POWERED_DOWN: the step docs/patching.md asks before a CycleCloud server
  rebuild, run here as the doc writes it; after the rebuild, the same step gives back the nodes left DOWN.
- A drain set after the suspend (the node IDLE+POWERING_DOWN, its VM not gone yet) is not cleared: the node ends
  IDLE+DRAIN+POWERED_DOWN (`drain~`) and a job asking for it pends "ReqNodeNotAvail" with the resume program never
  called, so hpclz's HealthCheckProgram drains no node that is powering down (templates/cloud-init/node.sh.j2).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, require
from tests.render.test_mount_failure import REASON, _health
from tests.render.test_scheduled_events import _node
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm
from tests.support.slurm_power import RESUME_LOG, PowerSaving, wait_until

SAVING = ["cc1", "cc2", "cc3"]
KEPT = ["cc4", "st1"]  # cc4 in SuspendExcNodes; st1 in the SuspendTime=INFINITE partition


class ShortIdle(PowerSaving):
    """The power-saving cluster with a SuspendTime and a SlurmdTimeout a test can wait for."""

    def lines(self, root: Path) -> list[str]:
        return [*[line.replace("SuspendTime=3600", "SuspendTime=6") for line in super().lines(root)], "SlurmdTimeout=4"]


@pytest.fixture
def cluster() -> Iterator[LocalSlurm]:
    require(harness.slurm_available(), "Slurm (slurmctld, slurmd, munged, sinfo)")
    started = harness.start_cluster([*SAVING, *KEPT], ShortIdle(saving=SAVING, static=["st1"], excluded="cc4"))
    try:
        yield started
    finally:
        harness.stop_cluster(started)


def _flags(cluster: LocalSlurm, node: str) -> set[str]:
    shown = cluster.client("scontrol", "show", "node", node, "-o")
    return set(next(t for t in shown.split() if t.startswith("State=")).removeprefix("State=").split("+"))


def _powered_down(cluster: LocalSlurm, nodes: list[str]) -> bool:
    return all("POWERED_DOWN" in _flags(cluster, n) for n in nodes)


@pytest.mark.slow
def test_a_drained_idle_node_is_powered_down_and_its_drain_cleared_unless_kept_out_of_power_saving(
    cluster: LocalSlurm,
) -> None:
    for node in ("cc1", "cc4"):
        cluster.client("scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=hpclz: gate passive failed: X")
    wait_until(lambda: _powered_down(cluster, ["cc1"]), "cc1 powered down", timeout=60)
    assert _flags(cluster, "cc1") == {"IDLE", "POWERED_DOWN"}  # no DRAIN: the next job may have it
    assert _flags(cluster, "cc4") == {"IDLE", "DRAIN"}


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_after_a_scheduler_rebuild_nodes_kept_out_of_power_saving_stay_down(cluster: LocalSlurm) -> None:
    """Every VM gone, slurmctld started again from its saved state: the power-saving nodes come back powered down
    after SuspendTime, the others stay DOWN without POWERED_DOWN."""
    for node in [*SAVING, *KEPT]:
        harness.vanish(cluster, node)
    harness.restart_controller(cluster)
    wait_until(lambda: all("DOWN" in _flags(cluster, n) for n in KEPT), "the kept nodes DOWN", timeout=60)
    wait_until(lambda: _powered_down(cluster, SAVING), "the power-saving nodes powered down", timeout=60)
    for node in SAVING:
        assert _flags(cluster, node) == {"IDLE", "POWERED_DOWN"}
    for node in KEPT:
        assert {"DOWN", "NOT_RESPONDING"} <= _flags(cluster, node) and "POWERED_DOWN" not in _flags(cluster, node)


def _rebuild_step() -> tuple[str, str]:
    """docs/patching.md's first step of a CycleCloud server rebuild: (the power down, the check), without sudo."""
    text = (REPO / "docs" / "patching.md").read_text()
    [block] = re.findall(r"^1\. on the scheduler, hand every node.*?```\n(.*?)```", text, re.S | re.M)
    lines = [line.strip() for line in block.splitlines()]
    update = (lines[0].removesuffix("\\") + " " + lines[1]).removeprefix("sudo ")
    check = lines[2].split("    #", 1)[0]
    return update, check


def _sh(cluster: LocalSlurm, command: str) -> str:
    done = subprocess.run(["bash", "-c", command], env=cluster.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_power_down_force_before_the_rebuild_brings_every_node_back_powered_down(cluster: LocalSlurm) -> None:
    """The step as docs/patching.md gives it, run as written: every node up is handed over, the check then prints
    nothing, and a controller started again from the saved state finds every node powered down."""
    update, check = _rebuild_step()
    every = [*SAVING, *KEPT]
    assert sorted(_sh(cluster, check).split()[::2]) == sorted(every)
    _sh(cluster, update)
    assert _node(cluster, "cc4")[1] == "hpclz: CycleCloud server rebuild"
    wait_until(lambda: _sh(cluster, check) == "", "the check printing nothing", timeout=60)
    harness.restart_controller(cluster)
    for node in every:
        assert _flags(cluster, node) == {"IDLE", "POWERED_DOWN"}, node


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_power_down_force_after_the_rebuild_gives_back_the_nodes_left_down(cluster: LocalSlurm) -> None:
    for node in [*SAVING, *KEPT]:
        harness.vanish(cluster, node)
    harness.restart_controller(cluster)
    wait_until(lambda: all("DOWN" in _flags(cluster, n) for n in KEPT), "the kept nodes DOWN", timeout=60)
    _sh(cluster, _rebuild_step()[0])
    wait_until(lambda: _powered_down(cluster, KEPT), "the kept nodes powered down", timeout=60)
    for node in KEPT:
        assert _flags(cluster, node) == {"IDLE", "POWERED_DOWN"}, node


class SlowSuspend(PowerSaving):
    """A SuspendTimeout long enough for a node to be seen IDLE+POWERING_DOWN: the time CycleCloud takes to delete the
    VM, while its slurmd still runs the HealthCheckProgram (cyclecloud-slurm sets SuspendTimeout=600)."""

    def lines(self, root: Path) -> list[str]:
        return [line.replace("SuspendTimeout=2", "SuspendTimeout=15") for line in super().lines(root)]


@pytest.fixture
def slow_suspend() -> Iterator[LocalSlurm]:
    require(harness.slurm_available(), "Slurm (slurmctld, slurmd, munged, sinfo)")
    power = SlowSuspend(saving=["cc1", "cc2"], static=["st1"], excluded="cc4")
    started = harness.start_cluster(["cc1", "cc2", "cc4", "st1"], power)
    try:
        yield started
    finally:
        harness.stop_cluster(started)


def _resumed(cluster: LocalSlurm) -> list[str]:
    log = cluster.root / RESUME_LOG
    return log.read_text().split() if log.exists() else []


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_node_powering_down_without_its_lustre_stays_idle_and_is_powered_up_for_the_next_job(
    slow_suspend: LocalSlurm, tmp_path: Path
) -> None:
    """ai-training's HealthCheckProgram runs on cc1 after the Scheduled Events watcher unmounted /lustre for the
    Terminate of its deletion: no drain, so cc1 ends `idle~` and the next job for it powers it up. cc2 is drained the
    way the program drained before (its reason, while powering down): it ends `drain~`, IDLE+DRAIN+POWERED_DOWN, and a
    job for it waits on it as unavailable, the resume program never called for it."""
    for node in ("cc1", "cc2"):
        slow_suspend.client("scontrol", "update", f"NodeName={node}", "State=POWER_DOWN")
    wait_until(lambda: all("POWERING_DOWN" in _flags(slow_suspend, n) for n in ("cc1", "cc2")), "powering down")
    _health(tmp_path, slow_suspend, "cc1", mounted=False)
    slow_suspend.client("scontrol", "update", "NodeName=cc2", "State=DRAIN", f"Reason={REASON}")
    assert _flags(slow_suspend, "cc1") == {"IDLE", "POWERING_DOWN"}
    wait_until(lambda: _powered_down(slow_suspend, ["cc1", "cc2"]), "cc1 and cc2 powered down", timeout=60)
    _health(tmp_path, slow_suspend, "cc1", mounted=False)
    assert _flags(slow_suspend, "cc1") == {"IDLE", "POWERED_DOWN"}
    assert _flags(slow_suspend, "cc2") == {"IDLE", "DRAIN", "POWERED_DOWN"}
    stranded = slow_suspend.client(
        "sbatch", "--parsable", "-p", "hpc", "-w", "cc2", "-o", "/dev/null", "--wrap", "true"
    )
    slow_suspend.client("sbatch", "--parsable", "-p", "hpc", "-w", "cc1", "-o", "/dev/null", "--wrap", "true")
    wait_until(lambda: "cc1" in _resumed(slow_suspend), "cc1 powered up for its job", timeout=30)
    assert "cc2" not in _resumed(slow_suspend)
    pending = slow_suspend.client("squeue", "-h", "-j", stranded.strip(), "-o", "%T %r").strip()
    assert pending.startswith("PENDING ReqNodeNotAvail"), pending
