"""hpclz's health gate in the rendered cluster: slurm.conf lines and the files the scheduler installs under /sched.

Where cyclecloud-slurm 4.0.9 (the pinned project, Azure/cyclecloud-slurm@50e6739) puts things:
- slurm.conf is written on the scheduler to /sched/<cluster>/slurm.conf from azure-slurm-install/templates/
  slurm.conf.template, with `<cluster>` the CycleCloud cluster name lower-cased, each character outside
  [a-zA-Z0-9-] made "-" (install.py:64, 139, 175-176); the cluster template's `slurm.additional.config` is then
  appended to it (install.py:588-592; the stock templates/slurm.txt:43 sets it from a parameter). slurm.conf keeps
  the last value of a repeated key, so what is appended wins.
- `Prolog=/etc/slurm/prolog.d/*` and `Epilog=/etc/slurm/epilog.d/*` (slurm.conf.template:36-37, install.py:540-541),
  /etc/slurm/prolog.d being /sched/<cluster>/prolog.d (install.py:506-507, 706-707), shared by every node; the
  scripts run in reverse alphabetical order (install.py:551-553), IMEX's is 90-, healthagent's 10- (install.py:
  523-524, 556-558). hpclz's gate is 50-: after IMEX has set up the NVLink domain, before healthagent's prolog.
- `SchedulerParameters=max_switch_wait=24:00:00` (slurm.conf.template:52): hpclz repeats it with
  nohold_on_prolog_fail, since its own line replaces the template's.
- healthagent, on by default (`slurm.enable_healthchecks = true`, templates/slurm.txt:36), owns
  `HealthCheckProgram=/sched/<cluster>/health.sh` every 60 s in any node state (install.py:516-527,
  slurm.conf.template:59-63). Slurm has one HealthCheckProgram, so hpclz's takes its place and runs healthagent's
  first, then hpclz's passive tier: both keep running, each drains with its own reason and neither resumes the
  other's nodes (hpclz.verify.gate).

hpclz's HealthCheckProgram is `/opt/hpclz/bin/hpclz-health`, on each execute node's own disk, written by the node's
cloud-init at its start: it never names a missing file. It runs healthagent's /sched/<cluster>/health.sh when that
exists, then hpclz's passive tier only once the scheduler has installed it, so a node whose gate is not (yet)
installed still gets healthagent's check. Before both it checks the shared file systems the node's cloud-init mounts
(storage.lustre, hpclz's NetApp volumes): while one is missing from /proc/self/mounts it drains the node with
"hpclz-health: mount missing: <mount point>", and resumes the node from that drain alone once the mount is back
(templates/cloud-init/node.sh.j2; the reason is not "hpclz:"-prefixed, so the gate, `hpclz verify --drain` and the
remediator leave it alone).

The gate's files under /sched are written by `hpclz-gate-install` on the scheduler, which a systemd timer starts
every minute until the install is done: it waits (exit 0, nothing written) until cyclecloud-slurm has created
/sched/<cluster>/prolog.d (install.py:506-507), then installs and leaves a stamp on the scheduler's own disk. A timer
and not a path unit, because the scheduler's cloud-init runs before CycleCloud mounts /sched: a path unit armed then
watches, with inotify, the local /sched that the mount then hides ("path units use the inotify(7) API to monitor
file systems", systemd.path(5)); a timer's start tests the path as it is when it fires.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Seconds slurmd waits for the Prolog and Epilog before it kills them, drains the node and requeues the job
# (slurm.conf(5), PrologEpilogTimeout; the default is to wait indefinitely). Long enough for IMEX's and
# healthagent's prologs beside hpclz's, whose budget stays well under it (hpclz.verify.gate.prolog_budget).
PROLOG_EPILOG_TIMEOUT_S = 180
PROLOG_BASE_S = 10.0
PROLOG_PER_GPU_S = 1.25  # 8 GPUs: 20 s, the gate's default prolog budget
EPILOG_BUDGET_S = 20.0
# HealthCheckProgram is killed after 60 s (slurm.conf(5)); healthagent's check runs first in the same program.
PASSIVE_BUDGET_S = 25.0
HEALTH_INTERVAL_S = 60  # cyclecloud-slurm's own interval with healthagent on (install.py:521)
STOCK_SCHEDULER_PARAMETERS = "max_switch_wait=24:00:00"  # slurm.conf.template:52 @50e6739
GATE_SCRIPT = "50-hpclz-gate.sh"
HEALTH_PROGRAM = "/opt/hpclz/bin/hpclz-health"
# On the scheduler's own disk: the gate is installed, and from which hpclz wheel (its SHA-256, the name of the venv
# /opt/hpclz/venv links to): hpclz-gate-install installs again when the venv runs another wheel, as after
# hpclz-wheel-update's switch (templates/cloud-init/gate_install.sh.j2). The scheduler's cloud-init also removes it, so
# a new scheduler VM installs its own script's budgets whatever the wheel.
GATE_STAMP = "/var/lib/hpclz/gate-installed"


def slurm_cluster_name(cluster: str) -> str:
    """The name cyclecloud-slurm gives the Slurm cluster and its /sched folder (install.py:175-176)."""
    return re.sub("[^a-zA-Z0-9-]", "-", cluster).lower()


@dataclass(frozen=True)
class HealthGate:
    sched: str  # /sched/<cluster>

    @property
    def home(self) -> str:
        return f"{self.sched}/hpclz"

    @property
    def bundle(self) -> str:
        return f"{self.home}/hpclz-node.pyz"

    @property
    def passive(self) -> str:
        """hpclz's passive tier as the scheduler installs it under /sched."""
        return f"{self.home}/passive.sh"

    @property
    def healthagent(self) -> str:
        """healthagent's check as cyclecloud-slurm installs it (install.py:522)."""
        return f"{self.sched}/health.sh"

    @property
    def health_program(self) -> str:
        """Slurm's HealthCheckProgram: on each execute node's own disk, so it always exists."""
        return HEALTH_PROGRAM

    def slurm_conf(self, suspend_minutes: int | None = None) -> str:
        """The lines cyclecloud-slurm appends to slurm.conf (`slurm.additional.config`), after its own template
        (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py l.588-593, append_file), so a key set here
        replaces the template's: the template's SuspendTime=300 (templates/slurm.conf.template l.47) gives way to
        compute.partitions' shortest idle_shutdown_minutes (hpclz.render.cloudinit.suspend_minutes)."""
        idle = (
            [
                "# compute.partitions[].idle_shutdown_minutes, the shortest: Slurm's SuspendTime, cluster-wide (over",
                "# cyclecloud-slurm's SuspendTime=300 above, as its README's SuspendTime=-1 example is given)",
                f"SuspendTime={suspend_minutes * 60}",
            ]
            if suspend_minutes
            else []
        )
        # Slurm warns at each daemon start of a key given twice ("specified more than once, latest value used")
        # and keeps the last. cyclecloud-slurm 4.0.9 has no setting for these three: install.py l.513-527 derives
        # HealthCheckProgram and HealthCheckInterval from healthagent being there (its program or "", 60 or 0), and
        # templates/slurm.conf.template l.52 writes SchedulerParameters as a constant; only `slurm.additional.config`
        # reaches slurm.conf after them. HealthCheckNodeState is not repeated: the template's ANY (l.61) is hpclz's.
        return "\n".join(
            [
                "# hpclz health gate (python3 -m hpclz.verify.gate): healthagent's check, then hpclz's passive tier.",
                "# HealthCheckProgram, HealthCheckInterval and SchedulerParameters repeat cyclecloud-slurm's lines",
                "# above (it has no setting for them): Slurm logs each as specified more than once and keeps this one.",
                f"HealthCheckProgram={self.health_program}",
                f"HealthCheckInterval={HEALTH_INTERVAL_S}",
                f"PrologEpilogTimeout={PROLOG_EPILOG_TIMEOUT_S}",
                "# a job whose prolog failed is requeued, not held, so it starts on another node",
                f"SchedulerParameters={STOCK_SCHEDULER_PARAMETERS},nohold_on_prolog_fail",
                *idle,
                "",
            ]
        )

    def budgets(self) -> dict[str, str]:
        """Each tier's budget in seconds, as the installer writes them into the scripts."""
        return {
            "prolog": f"{PROLOG_BASE_S:g}",
            "per_gpu": f"{PROLOG_PER_GPU_S:g}",
            "timeout": str(PROLOG_EPILOG_TIMEOUT_S),
            "epilog": f"{EPILOG_BUDGET_S:g}",
            "passive": f"{PASSIVE_BUDGET_S:g}",
        }


def health_gate(cluster: str) -> HealthGate:
    return HealthGate(sched=f"/sched/{slurm_cluster_name(cluster)}")
