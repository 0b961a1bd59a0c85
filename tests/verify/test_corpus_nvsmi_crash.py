"""A tool that prints and then crashes, from real outputs (corpus/nvsmi-crash/, PROVENANCE.md): neither a failed
device nor a pass. The check is not measured and flagged inconclusive, and the health gate drains for a re-test
instead of filing a fault or letting the node pass."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hpclz.remediate.engine import INCONCLUSIVE as UNDECIDED
from hpclz.remediate.engine import verdict_of
from hpclz.verify.gate import INCONCLUSIVE, decide, run_bounded
from hpclz.verify.model import NodeReport
from tests.verify.helpers import FIXTURES, GOOD, agent, by_id

CRASH = FIXTURES / "corpus" / "nvsmi-crash"
# capture -> the status a shell reports for the signal the thread shows (bash(1): 128 + signal)
CAPTURES = {
    "wsl2-kernel-13-segfault-after-header": 139,  # "segmentation fault", SIGSEGV 11
    "tdarr-1200-stack-smashing": 134,  # "Aborted (core dumped)", SIGABRT 6
}
GPU_CHECKS = ("HPCLZ-VFY-001", "HPCLZ-VFY-002", "HPCLZ-VFY-003", "HPCLZ-VFY-004", "HPCLZ-VFY-005")


def node(tmp_path: Path, files: dict[str, tuple[str, int]]) -> Path:
    """The healthy H200 node, except the named probes print `text` and exit `rc`."""
    folder = tmp_path / "node"
    folder.mkdir(parents=True)
    (folder / "fixtures.base").write_text(str(GOOD))
    for probe, (text, rc) in files.items():
        (folder / probe).write_text(text)
        (folder / f"{probe}.rc").write_text(str(rc))
    return folder


def both_queries(text: str, rc: int) -> dict[str, tuple[str, int]]:
    return {"nvidia-smi-q.xml": (text, rc), "query-gpu.csv": (text, rc)}


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_nvidia_smi_crashing_after_it_printed_is_inconclusive(name: str, tmp_path: Path) -> None:
    rc = CAPTURES[name]
    checks = by_id(agent(node(tmp_path, both_queries((CRASH / f"{name}.txt").read_text(), rc)), tier="health"))
    for check_id in GPU_CHECKS:
        assert (checks[check_id]["status"], checks[check_id]["inconclusive"]) == ("not_measured", True), check_id
    assert f"crashed (signal {rc - 128}) after printing" in checks["HPCLZ-VFY-001"]["message"]
    assert checks["HPCLZ-VFY-001"]["nhc_code"] is None  # no fault code: nothing to report to Azure


def test_a_complete_good_reading_followed_by_a_crash_is_still_inconclusive(tmp_path: Path) -> None:
    good_xml = (GOOD / "nvidia-smi-q.xml").read_text()
    checks = by_id(agent(node(tmp_path, both_queries(good_xml, 139)), tier="health"))
    assert (checks["HPCLZ-VFY-001"]["status"], checks["HPCLZ-VFY-001"]["inconclusive"]) == ("not_measured", True)


def test_the_second_query_answering_cleanly_is_a_reading(tmp_path: Path) -> None:
    text = (CRASH / "wsl2-kernel-13-segfault-after-header.txt").read_text()
    checks = by_id(agent(node(tmp_path, {"nvidia-smi-q.xml": (text, 139)}), tier="health"))
    assert checks["HPCLZ-VFY-001"]["status"] == "pass" and not checks["HPCLZ-VFY-001"]["inconclusive"]


def test_a_signal_with_nothing_printed_stays_aznhcs_nhc2015(tmp_path: Path) -> None:
    vfy001 = by_id(agent(node(tmp_path, both_queries("", 139)), tier="health"))["HPCLZ-VFY-001"]
    assert (vfy001["status"], vfy001["nhc_code"], vfy001["inconclusive"]) == ("fail", "NHC2015", False)


def test_nvlink_tool_crashing_after_good_lines_is_not_an_nvlink_fault(tmp_path: Path) -> None:
    good_links = (GOOD / "nvlink-status.txt").read_text()
    crashed = by_id(agent(node(tmp_path, {"nvlink-status.txt": (good_links, 139)}), tier="health"))["HPCLZ-VFY-007"]
    assert (crashed["status"], crashed["inconclusive"]) == ("not_measured", True)
    assert crashed["message"].startswith("NVLink state not read: inconclusive:")
    failed = by_id(agent(node(tmp_path / "x", {"nvlink-status.txt": (good_links, 1)}), tier="health"))
    assert failed["HPCLZ-VFY-007"]["status"] == "fail"  # an error status without a crash is still unreadable


def test_the_gate_drains_for_a_retest_on_an_inconclusive_check(tmp_path: Path) -> None:
    text = (CRASH / "tdarr-1200-stack-smashing.txt").read_text()
    folder = node(tmp_path, both_queries(text, 134))
    argv = [sys.executable, "-m", "hpclz.verify.agent", "--fixtures", str(folder), "--tier", "health"]
    decision = decide(run_bounded([*argv, "--json", str(tmp_path / "r.json")], budget_s=60), tmp_path / "r.json", 60)
    assert decision.outcome == INCONCLUSIVE and decision.reason.startswith("HPCLZ-VFY-001 inconclusive:")


def test_all_reduce_failing_is_aznhcs_nhcna_and_crashing_after_rows_is_inconclusive(tmp_path: Path) -> None:
    # aznhc: "nccl_allreduce returned error code N. FaultCode: NHCNA" (customTests/azure_nccl_allreduce.nhc @0078044).
    rows = (GOOD / "all_reduce_perf.txt").read_text()
    failed = by_id(agent(node(tmp_path / "rc1", {"all_reduce_perf.txt": (rows, 1)})))["HPCLZ-VFY-030"]
    assert (failed["status"], failed["nhc_code"]) == ("fail", "NHCNA")
    crashed = by_id(agent(node(tmp_path / "sig", {"all_reduce_perf.txt": (rows, 139)})))["HPCLZ-VFY-030"]
    assert (crashed["status"], crashed["inconclusive"], crashed["nhc_code"]) == ("not_measured", True, None)


def test_remediation_reads_a_crashed_tool_as_inconclusive_not_a_pass(tmp_path: Path) -> None:
    """A node back from repair whose nvidia-smi crashed after printing is not returned to service on that check."""
    text = (CRASH / "wsl2-kernel-13-segfault-after-header.txt").read_text()
    report = NodeReport.model_validate(agent(node(tmp_path, both_queries(text, 139)), tier="health"))
    assert verdict_of(report).outcome == UNDECIDED
