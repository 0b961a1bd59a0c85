"""A power-saving variant of the localhost Slurm cluster (tests/support/slurm.py), set up as CycleCloud sets up
its clusters, so `State=POWER_DOWN_ASAP` and the node roll can be tested against the real slurmctld.

CycleCloud's slurm.conf (Azure/cyclecloud-slurm@049346f azure-slurm-install/templates/slurm.conf.template) sets
`SuspendProgram=/opt/azurehpc/slurm/suspend_program.sh`, `ResumeProgram=...resume_program.sh`, `SuspendTime=300`,
`SuspendTimeout=600`, `ResumeTimeout=1800`, `SlurmctldParameters=idle_on_node_suspend` and
`ReconfigFlags=KeepPowerSaveSettings` (Slurm 22.05.8 rejects that flag, "Invalid ReconfigFlag": left out here), and
keeps nodes that must stay up out of power saving with `SuspendExcNodes` (its `Include keep_alive.conf`). The same
settings here, with times a test can wait for:
- the suspend program records the hostlist Slurm passes it and stops the nodes' slurmd (a VM being deallocated);
  the resume program only records (no test powers a node back up);
- SuspendTime is an hour, so no node powers down on its own while a test runs: only a roll powers one down;
- `power_save_interval=1` (slurm.conf(5): "How often the power_save thread looks to resume and suspend nodes ...
  Default is 10 seconds") so a power down starts within a second;
- partition `hpc` has power saving, partition `static` is `SuspendTime=INFINITE` (slurm.conf(5), partition
  SuspendTime: "Setting SuspendTime to INFINITE will disable suspending of nodes in this partition") and one node
  of `hpc` is in `SuspendExcNodes`, the two ways a node can be left without power saving; one node is in both
  partitions (slurm.conf(5): for such a node "the highest time will take effect").

Each test module that uses it gets its own controller (own folder, ports, state), so the shared cluster of the
other Slurm tests is never reconfigured.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import require
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm

SUSPEND_LOG = Path("power", "suspended.log")
RESUME_LOG = Path("power", "resumed.log")


@dataclass(frozen=True)
class PowerSaving:
    saving: list[str]  # partition hpc, power saving on
    static: list[str]  # partition static, SuspendTime=INFINITE
    excluded: str  # in hpc, but listed in SuspendExcNodes
    both: list[str] = field(default_factory=list)  # in hpc and in static

    def install(self, root: Path) -> None:
        folder = root / "power"
        folder.mkdir(mode=0o755)
        scontrol = shutil.which("scontrol") or "/usr/bin/scontrol"
        suspend = folder / "suspend.sh"
        suspend.write_text(
            "#!/bin/bash\n"
            "# Slurm runs this with the nodes to power down as one hostlist argument.\n"
            f'echo "$1" >>{root / SUSPEND_LOG}\n'
            f'for node in $(SLURM_CONF={root / "slurm.conf"} {scontrol} show hostnames "$1"); do\n'
            f'  kill "$(cat {root / "run"}/slurmd-$node.pid)" 2>/dev/null\n'
            "done\n"
            "exit 0\n"
        )
        resume = folder / "resume.sh"
        resume.write_text(f'#!/bin/bash\necho "$1" >>{root / RESUME_LOG}\nexit 0\n')
        for script in (suspend, resume):
            script.chmod(0o755)

    def lines(self, root: Path) -> list[str]:
        return [
            f"SuspendProgram={root / 'power' / 'suspend.sh'}",
            f"ResumeProgram={root / 'power' / 'resume.sh'}",
            "SuspendTime=3600",
            "SuspendTimeout=2",
            "ResumeTimeout=60",
            f"SuspendExcNodes={self.excluded}",
            "SlurmctldParameters=idle_on_node_suspend,power_save_interval=1,power_save_min_interval=0",
            f"PartitionName=hpc Nodes={','.join([*self.saving, self.excluded, *self.both])} Default=YES MaxTime=INFINITE "
            "State=UP",
            f"PartitionName=static Nodes={','.join([*self.static, *self.both])} Default=NO MaxTime=INFINITE State=UP "
            "SuspendTime=INFINITE",
        ]


def suspended(cluster: LocalSlurm) -> list[str]:
    """Every node the suspend program was called for, in order (its hostlists expanded by Slurm's parser)."""
    log = cluster.root / SUSPEND_LOG
    if not log.exists():
        return []
    names: list[str] = []
    for hostlist in log.read_text().split():
        names += cluster.client("scontrol", "show", "hostnames", hostlist).split()
    return names


def wait_until(ready: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Poll `ready()` (a callable returning bool) until it holds; a test's condition, never a timed assertion."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    raise TimeoutError(f"{what} not seen within {timeout:.0f} s")


@pytest.fixture(scope="module")
def power_cluster() -> Iterator[LocalSlurm]:
    require(harness.slurm_available(), "Slurm (slurmctld, slurmd, munged, sinfo)")
    power = PowerSaving(saving=["cc1", "cc2", "cc3", "cc4"], static=["st1"], excluded="cc5", both=["cc6"])
    cluster = harness.start_cluster(["cc1", "cc2", "cc3", "cc4", "cc5", "cc6", "st1"], power)
    try:
        yield cluster
    finally:
        harness.stop_cluster(cluster)
