"""All three gates on every preset's rendered plan: zero findings.

A failure here names the gate, the rule, the deployment and the JSON path of the template that broke
it: fix the template under templates/arm (or the rule, if the rule is wrong), not this test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hpclz.arm import checkov_gate
from hpclz.config.loader import load_config
from hpclz.gates import Gate, GateReport, check_plan
from hpclz.render.build import build_plan
from hpclz.render.model import DeploymentPlan
from tests.arm.support import require_schemas
from tests.conftest import PRESETS, require


def _plan(preset: Path) -> DeploymentPlan:
    return build_plan(load_config(preset).config)


def _explain(report: GateReport) -> str:
    return "\n".join(
        f"[{gate}] {f.rule_id} {f.location()} {f.path}: {f.message}"
        for gate, result in report.results.items()
        for f in result.findings
    )


def test_schema_and_lint_gates_pass_on_the_preset(preset_path: Path) -> None:
    require_schemas()
    plan = _plan(preset_path)
    assert plan.deployments and all(d.resources() for d in plan.deployments)  # zero findings must mean something
    report = check_plan(plan, checkov=False)
    assert report.ran == [Gate.SCHEMA, Gate.LINT]
    assert report.findings == [], _explain(report)


@pytest.mark.checkov
@pytest.mark.slow
def test_checkov_passes_on_every_preset() -> None:
    """One checkov scan over all presets' templates together: checkov's start-up dominates its cost."""
    require(checkov_gate.find_checkov() is not None, "checkov")
    plans = [_plan(p) for p in PRESETS]
    combined = plans[0].model_copy(update={"deployments": [d for plan in plans for d in plan.deployments]})
    report = check_plan(combined, schema=False, lint=False)
    assert report.ran == [Gate.CHECKOV]
    assert report.findings == [], _explain(report)
