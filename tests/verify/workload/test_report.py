"""The proof in the verify report: table, JSON, JUnit, plot."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

from rich.console import Console

from hpclz.verify.model import VerifyReport
from hpclz.verify.report import junit_xml, plot_html, print_report, to_json
from hpclz.verify.workload.expectations import for_gpu
from hpclz.verify.workload.judge import judge
from tests.verify.workload.test_judge import SHAPE, run_log


def _report() -> VerifyReport:
    logs = [
        run_log("train-node1", ["node1"], 30.0),
        run_log("train-node2", ["node2"], 45.0),
        run_log("train-node3", ["node3"], 30.0),
    ]
    judged = judge(SHAPE, logs, for_gpu("NVIDIA H100 SXM"), steps={"prepare": "COMPLETED"})
    reasons = {node: [c.message for c in checks] for node, checks in judged.bad_nodes.items()}
    return VerifyReport(workload=judged.report, bad_nodes=reasons)


def test_people_see_each_run_and_the_failed_verdict() -> None:
    out = io.StringIO()
    print_report(Console(file=out, width=200), _report())
    text = out.getvalue()
    assert "training proof" in text and "train-node2" in text and "MFU" in text
    assert "fail HPCLZ-VFY-952 Training throughput per node: node2:" in text
    assert "pass HPCLZ-VFY-950" not in text  # passing verdicts stay quiet unless asked for


def test_machines_get_json_and_junit() -> None:
    report = _report()
    assert report.workload is not None
    assert VerifyReport.model_validate_json(to_json(report)).workload == report.workload
    root = ET.fromstring(junit_xml(report))
    suite = next(s for s in root if s.get("name") == "training proof")
    assert suite.get("failures") == "1" and suite.get("tests") == str(len(report.workload.checks))


def test_the_plot_has_a_bar_per_run() -> None:
    html = plot_html(_report())
    assert "tokens/s per GPU" in html and html.count("<rect") == 3
