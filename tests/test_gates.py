"""check_plan: which gates ran, findings kept per gate, suppression, and the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpclz.arm import schema_gate
from hpclz.errors import HpclzError
from hpclz.findings import Severity
from hpclz.gates import Gate, check_plan, template_files
from tests.arm.support import deployment, good_deployment, load, plan_of, require_schemas


def test_findings_are_kept_per_gate_and_name_the_written_file() -> None:
    require_schemas()
    plan = plan_of(good_deployment(), deployment("bad", load("bad/schema-wrong-type.json")))
    report = check_plan(plan, checkov=False)
    assert report.ran == [Gate.SCHEMA, Gate.LINT]
    assert report.not_run == {Gate.CHECKOV: "disabled"}
    schema = report.results[Gate.SCHEMA].findings
    assert {f.rule_id for f in schema} == {"HPCLZ-TPL-001"}
    assert {f.file for f in schema} == {"02-bad.template.json"}
    assert report.counts["schema"] == {"error": 2, "warning": 0, "info": 0}
    assert not report.passed()


def test_template_files_follow_the_render_writer() -> None:
    plan = plan_of(deployment("network", {}), deployment("compute", {}))
    assert template_files(plan) == ["01-network.template.json", "02-compute.template.json"]


def test_warnings_pass_at_error_level_and_can_be_suppressed() -> None:
    plan = plan_of(deployment("unused", load("bad/tpl-013-unused.json"), {"spare": "x"}))
    report = check_plan(plan, schema=False, checkov=False)
    assert [f.rule_id for f in report.findings] == ["HPCLZ-TPL-013", "HPCLZ-TPL-013"]
    assert report.passed() and not report.passed(Severity.WARNING)
    quiet = check_plan(plan, schema=False, checkov=False, suppress=["hpclz-tpl-013"])
    assert quiet.findings == [] and len(quiet.results[Gate.LINT].suppressed) == 2


def test_deployment_location_is_the_allowed_literal_region() -> None:
    plan = plan_of(good_deployment())
    assert check_plan(plan, schema=False, checkov=False).findings == []
    moved = plan.model_copy(update={"deployments": [plan.deployments[0].model_copy(update={"location": "westeurope"})]})
    (finding,) = check_plan(moved, schema=False, checkov=False).findings
    assert finding.rule_id == "HPCLZ-TPL-015" and "'southcentralus'" in finding.message


def test_schema_gate_without_schemas_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(schema_gate.SCHEMAS_ENV, str(tmp_path))
    with pytest.raises(HpclzError, match="ARM schemas not found"):
        check_plan(plan_of(good_deployment()), lint=False, checkov=False)


def test_empty_plan_runs_no_checkov_scan() -> None:
    report = check_plan(plan_of(), schema=False)
    assert report.ran == [Gate.LINT]
    assert report.not_run[Gate.CHECKOV] == "the plan has no templates"
