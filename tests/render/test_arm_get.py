"""hpclz-arm-get's patience: within the time a powering-up node has to join Slurm, beyond Azure's role delay."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "cloud-init" / "arm_get.py"


def _arm_get() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hpclz_arm_get", TEMPLATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_its_waits_end_well_inside_slurms_resume_timeout_and_outlast_a_role_assignments_delay() -> None:
    arm_get = _arm_get()
    waits = arm_get.delays()
    # ResumeTimeout=1800 in cyclecloud-slurm 4.0.9's slurm.conf.template (l.45): the node's boot has more to do than
    # this read, so at most half of it; a role assignment "can take up to 10 minutes" to take effect.
    assert 600 <= sum(waits) <= arm_get.DEADLINE_S <= 1800 // 2
    assert waits[:6] == [10, 20, 30, 40, 50, 60] and set(waits[6:]) == {60}
    assert arm_get.delays(100) == [10, 20, 30, 40] and arm_get.delays(99) == [10, 20, 30] and arm_get.delays(5) == []
