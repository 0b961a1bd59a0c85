"""Power saving and roll phases, from what Slurm 22.05.8 printed here (tests/slurm/test_roll.py's cluster)."""

from __future__ import annotations

import pytest

from hpclz.slurm.client import NodeInfo
from hpclz.slurm.power import Phase, PowerSaving, _settings, _split_hostlist, phase

# `scontrol show config` lines of the power-saving test cluster (captured 2026-11-26, Slurm 22.05.8).
CONFIG = """\
ResumeProgram           = /tmp/hpclz-slurm-c8dnj9es/power/resume.sh
ResumeTimeout           = 60 sec
SuspendExcNodes         = cc5
SuspendExcParts         = (null)
SuspendProgram          = /tmp/hpclz-slurm-c8dnj9es/power/suspend.sh
SuspendTime             = 3600 sec
SuspendTimeout          = 2 sec
"""
# The same lines of the shared test cluster, which has no power saving.
NO_POWER = """\
ResumeProgram           = (null)
SuspendExcNodes         = (null)
SuspendProgram          = (null)
SuspendTime             = INFINITE
"""


def test_settings_read_as_scontrol_prints_them() -> None:
    said = _settings(CONFIG.splitlines())
    assert said["SuspendTime"] == "3600 sec" and said["SuspendExcNodes"] == "cc5"
    assert said["SuspendExcParts"] == "(null)"
    assert _settings(NO_POWER.splitlines())["SuspendProgram"] == "(null)"


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("drained!", Phase.PENDING),  # idle node just marked
        ("draining!", Phase.RUNNING_JOBS),  # marked while its job runs
        ("idle%", Phase.POWERING_DOWN),
        ("idle~", Phase.POWERED_DOWN),
        ("idle#", Phase.POWERING_UP),
        ("idle", Phase.UP),
        ("drained", Phase.UP),  # drained by someone, not marked for power down
    ],
)
def test_phase_from_sinfo_state(state: str, expected: Phase) -> None:
    assert phase(NodeInfo(name="n", state=state)) is expected


SAVING = PowerSaving(programs=True, suspend_time="3600 sec", excluded_nodes=frozenset({"cc5"}))


@pytest.mark.parametrize(
    ("power", "info", "why"),
    [
        (SAVING, NodeInfo("cc1", "idle", partitions=("hpc",)), None),
        (SAVING, NodeInfo("cc5", "idle", partitions=("hpc",)), "SuspendExcNodes keeps it powered up"),
        (
            PowerSaving(programs=True, suspend_time="300 sec", partition_time={"static": "INFINITE"}),
            NodeInfo("st1", "idle", partitions=("hpc", "static")),  # any INFINITE partition wins (highest time)
            "partition static has SuspendTime=INFINITE (no power saving)",
        ),
        (
            PowerSaving(programs=True, suspend_time="INFINITE", partition_time={"hpc": "300"}),
            NodeInfo("cc1", "idle", partitions=("hpc",)),  # the partition's own time turns it on
            None,
        ),
        (
            PowerSaving(programs=True, suspend_time="INFINITE"),
            NodeInfo("cc1", "idle", partitions=("hpc",)),
            "the cluster has SuspendTime=INFINITE (no power saving)",
        ),
        (
            PowerSaving(programs=True, suspend_time="300 sec", excluded_parts=frozenset({"hpc"})),
            NodeInfo("cc1", "idle", partitions=("hpc",)),
            "SuspendExcParts keeps partition hpc powered up",
        ),
        (
            PowerSaving(programs=False, suspend_time="INFINITE"),
            NodeInfo("n1", "idle", partitions=("debug",)),
            "Slurm here has no power saving (SuspendProgram or ResumeProgram not set)",
        ),
    ],
)
def test_which_nodes_slurm_may_power_down(power: PowerSaving, info: NodeInfo, why: str | None) -> None:
    assert power.why_not(info) == why


def test_suspend_exc_nodes_split_outside_brackets() -> None:
    """slurm.conf(5) SuspendExcNodes: "<nodes>[:<count>]", several separated by commas."""
    assert _split_hostlist("gpu[1-4,7]:2,cc5") == ["gpu[1-4,7]:2", "cc5"]


def test_verify_leaves_rolling_nodes_alone_whoever_drained_them() -> None:
    watcher = "hpclz: scheduled-event Reboot E1 not before Mon, 19 Sep 2016 18:29:47 GMT"
    assert NodeInfo("n", "drained", reason=watcher).drained_by_hpclz  # verify may re-test and resume it
    assert not NodeInfo("n", "drained!", reason=watcher).drained_by_hpclz  # on its way to power down
    assert not NodeInfo("n", "draining!", reason=watcher).drained_by_hpclz
    assert not NodeInfo("n", "drained", reason="hpclz: roll: new node definition").drained_by_hpclz
