"""Report outputs: the rich tables, JSON, JUnit XML, and the offline bandwidth plot."""

from __future__ import annotations

import importlib.util
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console

from hpclz.verify import report as rep
from hpclz.verify.local import run_local
from hpclz.verify.model import BandwidthPoint, CollectiveResult, Status, VerifyReport
from tests.verify.helpers import FAULTS, GOOD


def two_nodes() -> VerifyReport:
    good = run_local("Standard_ND96isr_H200_v5", nccl=True, fixtures=GOOD)
    bad = run_local("Standard_ND96isr_H200_v5", nccl=True, fixtures=FAULTS / "nccl-slow")
    bad.nodes[0].node = "bad1"
    bad.collectives[0].name = "intranode bad1"
    return VerifyReport(
        landing_zone="demo",
        nodes=good.nodes + bad.nodes,
        collectives=good.collectives + bad.collectives,
        bad_nodes={"bad1": bad.bad_nodes[next(iter(bad.bad_nodes))]},
    )


def test_tables_show_status_and_measured_vs_threshold() -> None:
    console = Console(record=True, width=250)
    rep.print_report(console, two_nodes())
    text = console.export_text()
    assert "bad1" in text and "HPCLZ-VFY-030" in text and "152.4 GB/s / 431 GB/s" in text
    assert "not_measured" in text  # DCGM is absent on the captured node and the table says so
    assert re.search(r"intranode bad1 .* 152\.4 .* 431 .* fail", text)


def test_json_round_trips_through_the_model() -> None:
    report = two_nodes()
    again = VerifyReport.model_validate(json.loads(rep.to_json(report)))
    assert again == report


def test_junit_has_a_case_per_check_and_collective() -> None:
    report = two_nodes()
    root = ET.fromstring(rep.junit_xml(report).split("\n", 1)[1])
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    bad = suites["node bad1"]
    assert int(bad.get("tests", 0)) == len(report.nodes[1].checks)
    # DCGM absent, no STREAM on GPU sizes, no IB loopback all-reduce on H200 (aznhc runs it on ND A100 v4)
    assert (bad.get("failures"), bad.get("skipped")) == ("1", "3")
    failure = bad.find("testcase/failure")
    assert failure is not None and "152.4" in (failure.get("message") or "")
    assert suites["collectives"].get("failures") == "1" and suites["collectives"].get("tests") == "2"


def test_plot_is_self_contained_html_with_one_svg_per_run(tmp_path: Path) -> None:
    report = two_nodes()
    report.collectives.append(
        CollectiveResult(
            name="pair n1-n2",
            nodes=["n1", "n2"],
            backend="gloo",
            ranks=2,
            points=[
                BandwidthPoint(size_bytes=s, time_us=1.0, algbw_gbps=bw, busbw_gbps=bw)
                for s, bw in ((1024, 0.5), (1 << 20, 2.0), (1 << 24, 3.0))
            ],
            status=Status.WARN,
        )
    )
    written = rep.write_plot(report, tmp_path / "plots" / "busbw.html")
    html = written[0].read_text()
    assert html.count("<svg") == 3 and html.count('class="threshold"') == 2  # the gloo pair has no threshold
    polylines = re.findall(r'class="busbw"[^>]*points="([^"]+)"', html)
    assert [len(p.split()) for p in polylines] == [1, 1, 3]
    assert not re.search(r"(src|href)=\"https?://", html)  # nothing fetched from the network
    has_mpl = importlib.util.find_spec("matplotlib") is not None
    assert [p.suffix for p in written] == ([".html", ".png"] if has_mpl else [".html"])


def test_junit_file_is_written(tmp_path: Path) -> None:
    path = rep.write_junit(two_nodes(), tmp_path / "out" / "verify.xml")
    assert ET.parse(path).getroot().tag == "testsuites"


def test_bad_nodes_name_each_failing_check_the_same_way_for_slurm_and_local_runs() -> None:
    from hpclz.slurm.client import NodeInfo
    from hpclz.verify.dispatch import read_node, select

    down = select([NodeInfo("n2", "down*", "Not responding")], drain=False).skipped["n2"]
    silent = read_node(Path("/nonexistent"), "n3", 60)
    silent.checks[0].message = ""
    local = run_local("Standard_ND96isr_H200_v5", nccl=True, fixtures=FAULTS / "nccl-slow")
    local_node = local.nodes[0]
    assert rep.bad_nodes([down, silent, local_node]) == {
        "n2": ["HPCLZ-VFY-901 Node reachable through Slurm: Slurm reports it down* (Not responding)"],
        "n3": ["HPCLZ-VFY-900 Node returned a readable report"],
        local_node.node: local.bad_nodes[local_node.node],
    }
    assert local.bad_nodes[local_node.node][0].startswith("HPCLZ-VFY-030 Intra-node all-reduce bus bandwidth: busbw")


def test_a_slow_rack_is_printed_as_a_rack() -> None:
    why = "rack nvl_b (18 nodes): bus bandwidth 410 GB/s < 600 GB/s; ring pairs inside it are slow alike"
    run = CollectiveResult(name="rack-nvl_b", nodes=[f"gb{i}" for i in range(19, 37)], backend="nccl", ranks=72,
                           status=Status.FAIL, message="bus bandwidth 410 GB/s < 600 GB/s")  # fmt: skip
    console = Console(record=True, width=250)
    rep.print_report(console, VerifyReport(collectives=[run], slow_racks={"nvl_b": why}))
    text = console.export_text()
    assert f"slow rack nvl_b: {why}" in text and "bad node" not in text
