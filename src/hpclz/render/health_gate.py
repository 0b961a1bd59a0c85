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

The files are written by `hpclz-gate-install` on the scheduler, started by a systemd path unit once
cyclecloud-slurm has created /sched/<cluster>/prolog.d ("PathExists= ... If the file exists, the configured unit is
activated", systemd.path(5)): the scheduler's cloud-init runs before CycleCloud mounts and configures /sched.
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
    def health_program(self) -> str:
        return f"{self.home}/health.sh"

    def slurm_conf(self) -> str:
        """The lines cyclecloud-slurm appends to slurm.conf (`slurm.additional.config`)."""
        return "\n".join(
            [
                "# hpclz health gate (python3 -m hpclz.verify.gate): healthagent's check, then hpclz's passive tier",
                f"HealthCheckProgram={self.health_program}",
                f"HealthCheckInterval={HEALTH_INTERVAL_S}",
                "HealthCheckNodeState=ANY",
                f"PrologEpilogTimeout={PROLOG_EPILOG_TIMEOUT_S}",
                "# a job whose prolog failed is requeued, not held, so it starts on another node",
                f"SchedulerParameters={STOCK_SCHEDULER_PARAMETERS},nohold_on_prolog_fail",
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
