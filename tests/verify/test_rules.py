"""The verify checks as registered rules: metadata, a passing and a failing case each, suppression by ID.

Node checks get their cases from the fixtures; the outcomes the head node observes (HPCLZ-VFY-9NN) get theirs
from the dispatcher's own functions, fed a situation that must produce the outcome and one that must not.
"""

from __future__ import annotations

import inspect
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hpclz.findings import Severity
from hpclz.registry import VERIFY_RULES, all_rules
from hpclz.rules.base import RULE_ID, Rule, run_rules
from hpclz.slurm.client import NodeInfo
from hpclz.verify.agent import gather
from hpclz.verify.checks.outcomes import OUTCOMES
from hpclz.verify.checks.rules import NodeContext, OutcomeRule, VerifyRule
from hpclz.verify.collective_job import analyse_pairs, pair_failures
from hpclz.verify.dispatch import RESULT_PLACEHOLDER, FanOut, _why_missing, node_code, node_script, read_node, select
from hpclz.verify.model import BandwidthPoint, CollectiveResult, NodeReport, Status
from hpclz.verify.probes import detect_sku
from hpclz.verify.probes.source import Source
from hpclz.verify.thresholds import load_thresholds
from hpclz.verify.workload.expectations import for_gpu
from hpclz.verify.workload.judge import judge
from tests.verify.helpers import FAULTS, GOOD, H200, HBV3, agent
from tests.verify.test_checks import FAULT_TABLE
from tests.verify.workload.test_judge import SHAPE, run_log

FAILING = {check_id: FAULTS / fault for fault, (check_id, _, _) in FAULT_TABLE.items()}
FAILING["HPCLZ-VFY-001"] = FAULTS / "nvsmi-hung"
FAILING["HPCLZ-VFY-024"] = HBV3 / ".." / "hbv3-faults" / "stream-slow"
# ND96asr_v4 (aznhc's IB loopback all-reduce runs on ND A100 v4 only) with real all_reduce_perf outputs.
A100_LOOPBACK = HBV3.parent / "nd96asr-v4"
FAILING["HPCLZ-VFY-031"] = A100_LOOPBACK / "loopback-stalled"
# The real H200 readings (Fabric N/A) on a rack-scale size, where every GPU must report its NVLink fabric.
FAILING["HPCLZ-VFY-019"] = HBV3.parent / "gb300-faults" / "fabric-not-registered"
PASSING = {rule.id: GOOD for rule in VERIFY_RULES} | {
    "HPCLZ-VFY-023": FAULTS / "dcgm-pass",
    "HPCLZ-VFY-024": HBV3,
    "HPCLZ-VFY-031": A100_LOOPBACK / "loopback-pass",
}
NODE_RULES = [r for r in VERIFY_RULES if issubclass(r, VerifyRule)]
OUTCOME_RULES = [r for r in VERIFY_RULES if issubclass(r, OutcomeRule)]


def healthy(folder: Path) -> NodeReport:
    """What the dispatcher reads back from a node whose agent ran and wrote its report."""
    (folder / "n1.report.json").write_text(NodeReport.model_validate(agent(GOOD)).model_dump_json())
    (folder / "n1.rc").write_text("0\n")
    return read_node(folder, "n1", 60)


def _pair(a: str, b: str, busbw: float) -> CollectiveResult:
    point = BandwidthPoint(size_bytes=1 << 30, time_us=1.0, algbw_gbps=busbw, busbw_gbps=busbw)
    return CollectiveResult(name=f"pair-{a}-{b}", nodes=[a, b], backend="nccl", ranks=16, points=[point])


def _pairs(slow_n1: bool) -> dict[str, NodeReport]:
    n1 = 120.0 if slow_n1 else 370.0
    ring = [_pair("n0", "n1", n1), _pair("n1", "n2", n1), _pair("n2", "n3", 375.0), _pair("n3", "n0", 372.0)]
    return pair_failures(analyse_pairs(ring, threshold=350.0))


def _job_not_run(folder: Path) -> NodeReport:
    why, outcome_id = _why_missing("PENDING", FanOut(command=["true"], work_dir=folder), folder / "job-0.out")
    return read_node(folder, "n1", 60, missing=why, missing_id=outcome_id)


def _no_agent(folder: Path) -> NodeReport:
    """The node script itself, run by bash on a "node" that has neither the node bundle nor the interpreter."""
    folder = folder / "no-agent"  # its own run's folder: the passing case reads n1's files from the test's
    folder.mkdir()
    code = node_code(
        "hpclz.verify.agent", bundle=str(folder / "absent.pyz"), python=None, fallback=str(folder / "no-python")
    )
    script = folder / "node.sh"
    script.write_text(node_script(["--json", RESULT_PLACEHOLDER], folder, 60, code))
    subprocess.run(["bash", str(script)], env={**os.environ, "SLURMD_NODENAME": "n1"}, check=True, timeout=60)
    return read_node(folder, "n1", 60)


def _proof(check_id: str, *, broken: bool) -> Case:
    """The training proof's verdict on n1 (hpclz.verify.workload.judge), in a node report as the head node keeps it."""

    def case(tmp: Path) -> NodeReport:
        fast, slow = (30.0, 90.0) if broken else (30.0, 30.5)
        logs = [run_log(f"train-{n}", [n], fast) for n in ("n0", "n2")] + [run_log("train-n1", ["n1"], slow)]
        logs.append(run_log("train-all", ["n0", "n1", "n2"], 60.0 if broken else 31.0, loss_to=6.5 if broken else 2.0))
        steps = {"prepare": "FAILED" if broken else "COMPLETED"}
        checks = judge(SHAPE, logs, for_gpu("NVIDIA H100 SXM"), steps=steps).report.checks
        failed = [c for c in checks if c.check_id == check_id and c.status is Status.FAIL]
        return NodeReport(node="n1", checks=failed[:1]) if failed else healthy(tmp)

    return case


# outcome ID -> (a situation where the dispatcher reports it for n1, the same situation gone well)
Case = Callable[[Path], NodeReport]
OUTCOME_CASES: dict[str, tuple[Case, Case]] = {
    "HPCLZ-VFY-900": (lambda tmp: read_node(tmp, "n1", 60), healthy),
    "HPCLZ-VFY-901": (
        lambda _tmp: select([NodeInfo("n1", "down*", "Not responding")], drain=True).skipped["n1"],
        lambda tmp: select([NodeInfo("n1", "idle")], drain=True).skipped.get("n1") or healthy(tmp),
    ),
    "HPCLZ-VFY-902": (
        lambda _tmp: select([NodeInfo("n1", "allocated")], drain=True).skipped["n1"],
        lambda tmp: select([NodeInfo("n1", "idle")], drain=True).skipped.get("n1") or healthy(tmp),
    ),
    "HPCLZ-VFY-903": (_job_not_run, healthy),
    "HPCLZ-VFY-904": (_no_agent, healthy),
    "HPCLZ-VFY-910": (
        lambda _tmp: _pairs(slow_n1=True)["n1"],
        lambda tmp: _pairs(slow_n1=False).get("n1") or healthy(tmp),
    ),
    **{
        check_id: (_proof(check_id, broken=True), _proof(check_id, broken=False))
        for check_id in ("HPCLZ-VFY-950", "HPCLZ-VFY-951", "HPCLZ-VFY-952", "HPCLZ-VFY-953")
    },
}


def context(fixtures: Path) -> NodeContext:
    thresholds = load_thresholds(detect_sku(Source(fixtures, node="n1")) or H200)
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


def test_every_verify_rule_has_its_cases() -> None:
    assert {r.id for r in NODE_RULES} == set(FAILING)
    assert {r.id for r in OUTCOME_RULES} == set(OUTCOME_CASES) == {spec.id for spec in OUTCOMES}
    assert len(NODE_RULES) + len(OUTCOME_RULES) == len(VERIFY_RULES)


@pytest.mark.parametrize("rule", NODE_RULES, ids=lambda r: r.id)
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


@pytest.mark.parametrize("rule", OUTCOME_RULES, ids=lambda r: r.id)
def test_each_dispatch_outcome_has_a_failing_and_a_passing_case(rule: type[Rule[Any]], tmp_path: Path) -> None:
    fails, passes = OUTCOME_CASES[rule.id]
    report = fails(tmp_path)
    assert [c.check_id for c in report.checks] == [rule.id]
    assert report.checks[0].title == rule.title and report.checks[0].fix == rule.fix  # one source for both
    found, _ = run_rules(VERIFY_RULES, NodeContext(report=report))
    assert [(f.rule_id, f.severity, f.path) for f in found] == [(rule.id, rule.severity, "node.n1")]
    assert found[0].message == report.checks[0].message
    healthy_report = passes(tmp_path)
    assert rule.id not in {c.check_id for c in healthy_report.checks}
    assert run_rules([rule], NodeContext(report=healthy_report)) == ([], [])


def test_a_node_check_is_also_found_in_a_report_the_head_node_read_back() -> None:
    """The head node has the nodes' reports, not their readings: the same rules judge those."""
    report = NodeReport.model_validate(agent(FAULTS / "xid79"))
    found, suppressed = run_rules(VERIFY_RULES, NodeContext(report=report), suppress=["HPCLZ-VFY-006"])
    assert found == [] and [f.rule_id for f in suppressed] == ["HPCLZ-VFY-006"]
    assert "Xid 79" in suppressed[0].message and suppressed[0].path == "node.node-under-test"
