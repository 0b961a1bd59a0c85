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
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, require
from tests.render.test_scheduled_events import _node
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm
from tests.support.slurm_power import PowerSaving, wait_until

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
