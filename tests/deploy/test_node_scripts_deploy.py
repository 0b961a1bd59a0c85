"""Deploy's next steps name the running nodes that keep their old scripts: a new idle time is a new SuspendTime in the
slurm.conf lines (slurm.additional.config), which cyclecloud-slurm writes only when its install runs on the scheduler
(Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.588-593), so the scheduler is replaced after the
deploy (hpclz.plan.node_scripts). Through the ARM stand-in and the real Azure SDK clients."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RunCli
from tests.deploy.test_day2 import edit
from tests.support.arm_standin import ArmStandIn

IDLE = ("idle_shutdown_minutes: 15", "idle_shutdown_minutes: 30")


def test_new_slurm_conf_lines_put_the_schedulers_replacement_in_plan_and_next_steps(
    arm: ArmStandIn, energy: Path, run_cli: RunCli
) -> None:
    first = run_cli("deploy", str(energy), "--yes")
    assert first.exit_code == 0, first.stdout + first.stderr
    assert "Node scripts" not in first.stdout  # nothing applied before: every node is new

    edit(energy, (IDLE,))
    plan = run_cli("plan", str(energy))
    assert "these differ from the cluster definition last applied: scheduler (slurm.conf lines)" in plan.stdout
    assert "Impact: the scheduler is replaced after the deploy" in plan.stdout

    again = run_cli("deploy", str(energy), "--yes")
    assert again.exit_code == 0, again.stdout + again.stderr
    steps = " ".join(again.stdout.split("Next steps", 1)[1].split())
    raised = steps.index("1. before the scheduler is replaced, on it: raise SlurmdTimeout and SlurmctldTimeout")
    replaced = steps.index("2. scheduler (new slurm.conf lines)")
    # The running slurmd learn the new scheduler's address (hpclz.plan.upgrade.CTLD_ANNOUNCED) before a job is tried.
    announced = steps.index("3. as soon as `scontrol ping` on the new scheduler reports its slurmctld UP")
    restored = steps.index("4. once the new scheduler talks to the nodes and a job starts and finishes")
    assert raised < replaced < announced < restored
    assert "`cyclecloud terminate_node <cluster> scheduler`, then `cyclecloud start_node <cluster> scheduler`" in steps

    # Applied: the next plan compares with the new definition, and names no node.
    clean = run_cli("plan", str(energy))
    assert "Node scripts" not in clean.stdout, clean.stdout
