"""The verify checks as registered rules: metadata, a passing and a failing case each, suppression by ID."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from hpclz.findings import Severity
from hpclz.rules.base import RULE_ID, Rule, run_rules
from hpclz.rules.registry import VERIFY_RULES, all_rules
from hpclz.verify.agent import gather
from hpclz.verify.checks.rules import NodeContext
from hpclz.verify.probes.source import Source
from hpclz.verify.thresholds import load_thresholds
from tests.verify.helpers import FAULTS, GOOD, H200
from tests.verify.test_checks import FAULT_TABLE

FAILING = {check_id: FAULTS / fault for fault, (check_id, _, _) in FAULT_TABLE.items()}
FAILING["HPCLZ-VFY-001"] = FAULTS / "nvsmi-hung"
PASSING = {rule.id: GOOD for rule in VERIFY_RULES} | {"HPCLZ-VFY-023": FAULTS / "dcgm-pass"}


def context(fixtures: Path) -> NodeContext:
    thresholds = load_thresholds(H200)
    return NodeContext(gather(Source(fixtures, node="n1"), thresholds, tier="perf", with_nccl=True), thresholds)


def test_verify_rules_are_in_the_registry_in_order() -> None:
    ids = [r.id for r in VERIFY_RULES]
    assert ids == sorted(ids) and len(ids) >= 19
    assert set(ids) <= {r.id for r in all_rules()}


@pytest.mark.parametrize("rule", VERIFY_RULES, ids=lambda r: r.id)
def test_verify_rule_metadata(rule: type[Rule[Any]]) -> None:
    assert RULE_ID.match(rule.id) and rule.area() == "VFY"
    assert isinstance(rule.severity, Severity)
    assert rule.title and "\n" not in rule.title and len(rule.title) <= 90
    assert rule.fix.strip() and inspect.getdoc(rule)


@pytest.mark.parametrize("rule", VERIFY_RULES, ids=lambda r: r.id)
def test_each_verify_rule_has_a_failing_and_a_passing_case(rule: type[Rule[Any]]) -> None:
    assert rule.id in FAILING, f"{rule.id} has no failing fixture"
    failing, _ = run_rules([rule], context(FAILING[rule.id]))
    assert [f.rule_id for f in failing] == [rule.id]
    assert failing[0].path == "node.n1" and failing[0].message
    passing, _ = run_rules([rule], context(PASSING[rule.id]))
    assert passing == []


def test_a_warn_only_check_reports_a_warning_finding_and_suppression_works() -> None:
    ctx = context(FAULTS / "persistence-off")
    reported, _ = run_rules(VERIFY_RULES, ctx)
    assert [(f.rule_id, f.severity) for f in reported] == [("HPCLZ-VFY-010", Severity.WARNING)]
    reported, suppressed = run_rules(VERIFY_RULES, ctx, suppress=["hpclz-vfy-010"])
    assert reported == [] and [f.rule_id for f in suppressed] == ["HPCLZ-VFY-010"]
