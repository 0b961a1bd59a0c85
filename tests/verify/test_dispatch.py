"""Dispatch logic that needs no Slurm: batching, the node script, reading results, selection, pair analysis."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpclz.slurm.client import NodeInfo
from hpclz.verify.collective_job import THROTTLE_NODE, CollectivePlan, analyse_pairs, rank_main, ring_pairs
from hpclz.verify.collective_job import job_script as collective_job_script
from hpclz.verify.collective_job import throttle_s as throttle_for
from hpclz.verify.dispatch import (
    JOB_NOT_RUN,
    NO_RESULT,
    NOT_TESTED,
    RESULT_PLACEHOLDER,
    UNREACHABLE,
    FanOut,
    _why_missing,
    batches,
    drain_reason,
    node_script,
    read_node,
    select,
)
from hpclz.verify.model import BandwidthPoint, CheckResult, CollectiveResult, NodeReport, Status
from hpclz.verify.session import collective_backend
from tests.support.local_http import free_ports


@given(st.integers(min_value=0, max_value=1000), st.integers(min_value=1, max_value=150))
def test_batches_cover_every_node_once_and_respect_the_cap(count: int, cap: int) -> None:
    nodes = [f"n{i}" for i in range(count)]
    groups = batches(nodes, cap)
    assert sorted(n for g in groups for n in g) == sorted(nodes)
    assert all(0 < len(g) <= cap for g in groups)
    if groups:
        assert max(map(len, groups)) - min(map(len, groups)) <= 1  # near-equal, no 100 + 1 split
    assert [n for g in groups for n in g] == nodes  # contiguous, in order


def test_three_hundred_nodes_become_three_jobs_of_a_hundred() -> None:
    assert [len(g) for g in batches([f"gpu{i:03d}" for i in range(301)], 100)] == [76, 75, 75, 75]
    assert [len(g) for g in batches([f"gpu{i:03d}" for i in range(300)], 100)] == [100, 100, 100]


def _run_node_script(tmp_path: Path, command: list[str], node: str, budget: int = 20) -> None:
    script = tmp_path / "node.sh"
    script.write_text(node_script(command, tmp_path, budget))
    subprocess.run(["/bin/bash", str(script)], env={**os.environ, "SLURMD_NODENAME": node}, check=True, timeout=30)


def test_node_script_keeps_rc_streams_and_the_report_path(tmp_path: Path) -> None:
    report = NodeReport(node="x", checks=[CheckResult(check_id="HPCLZ-VFY-001", title="t", status=Status.PASS)])
    writer = f"import sys; open(sys.argv[1], 'w').write({report.model_dump_json()!r}); print('it ran'); sys.exit(6)"
    _run_node_script(tmp_path, ["python3", "-c", writer, RESULT_PLACEHOLDER], "gpu007")
    assert (tmp_path / "gpu007.rc").read_text().strip() == "6"
    assert (tmp_path / "gpu007.stdout").read_text() == "it ran\n"
    got = read_node(tmp_path, "gpu007", 20)
    assert got.node == "gpu007"  # the node name comes from Slurm, not from what the command claims
    assert got.checks[0].check_id == "HPCLZ-VFY-001"


def test_a_command_that_overruns_its_budget_is_a_timeout_failure(tmp_path: Path) -> None:
    _run_node_script(tmp_path, ["sleep", "30"], "gpu001", budget=1)
    got = read_node(tmp_path, "gpu001", 1)
    assert got.status is Status.FAIL
    assert got.checks[0].check_id == NO_RESULT
    assert "timed out after 1 s" in got.checks[0].message


def test_unreadable_output_names_the_exit_status_and_stderr(tmp_path: Path) -> None:
    _run_node_script(tmp_path, ["bash", "-c", "echo 'Traceback: boom' >&2; exit 3"], "gpu002")
    message = read_node(tmp_path, "gpu002", 20).checks[0].message
    assert message.startswith("node command exited 3: Invalid JSON")
    assert message.endswith("(stderr: Traceback: boom)")


def test_a_report_of_the_wrong_shape_says_which_field(tmp_path: Path) -> None:
    _run_node_script(tmp_path, ["echo", '{"node": "n", "checks": [{"check_id": "X", "title": "t"}]}'], "gpu004")
    message = read_node(tmp_path, "gpu004", 20).checks[0].message
    assert message == "node command printed no readable report: checks.0.status: Field required"


def test_a_node_that_left_nothing_reports_no_result(tmp_path: Path) -> None:
    got = read_node(tmp_path, "gpu003", 60, missing="its job overran the time budget (RUNNING) and was cancelled")
    assert got.status is Status.FAIL
    assert got.checks[0].message == "no result within 60 s: its job overran the time budget (RUNNING) and was cancelled"


def test_a_job_without_output_points_at_the_shared_filesystem(tmp_path: Path) -> None:
    plan = FanOut(command=["true"], work_dir=tmp_path, queue_wait_s=120)
    assert _why_missing(None, plan, tmp_path / "job-0.out") == (
        f"the job left no output either: is {tmp_path} on a filesystem every node shares?",
        JOB_NOT_RUN,
    )
    (tmp_path / "job-0.out").write_text("")
    assert _why_missing(None, plan, tmp_path / "job-0.out") == ("the job ended without it", NO_RESULT)
    why, check_id = _why_missing("PENDING", plan, tmp_path / "job-0.out")
    assert why.startswith("its job waited more than 120 s") and check_id == JOB_NOT_RUN


def test_selection_by_state_and_who_drained() -> None:
    infos = [
        NodeInfo("a", "idle"),
        NodeInfo("b", "mixed"),
        NodeInfo("c", "down*", "Not responding"),
        NodeInfo("d", "drained", "hpclz: HPCLZ-VFY-006 Xid 79"),
        NodeInfo("e", "drained", "bad DIMM, ticket 42"),
        NodeInfo("f", "allocated"),
    ]
    with_drain = select(infos, drain=True)
    assert with_drain.runnable == ["a"]
    assert with_drain.skipped["b"].checks[0].message == "not tested: busy running jobs (Slurm reports it mixed)"
    assert with_drain.skipped["f"].status is Status.NOT_MEASURED
    assert with_drain.retest == ["d"]
    assert with_drain.skipped["c"].checks[0].check_id == UNREACHABLE
    assert with_drain.skipped["c"].status is Status.FAIL
    assert with_drain.skipped["e"].checks[0].check_id == NOT_TESTED
    assert with_drain.skipped["e"].status is Status.NOT_MEASURED  # an operator's drain is not our failure

    without = select(infos, drain=False)
    assert without.retest == []
    assert "pass --drain to re-test" in without.skipped["d"].checks[0].message


def test_drain_reason_is_prefixed_and_counts_the_rest() -> None:
    checks = [
        CheckResult(check_id="HPCLZ-VFY-006", title="Xid", status=Status.FAIL, message="Xid 79 on 00:06.0"),
        CheckResult(check_id="HPCLZ-VFY-002", title="GPU count", status=Status.FAIL, message="7 of 8 GPUs"),
        CheckResult(check_id="HPCLZ-VFY-001", title="smi", status=Status.PASS),
    ]
    assert drain_reason(NodeReport(node="n", checks=checks)) == "hpclz: HPCLZ-VFY-006 Xid 79 on 00:06.0 [+1 more]"


def test_ring_pairs_put_every_node_in_two_pairs() -> None:
    assert ring_pairs(["a"]) == []
    assert ring_pairs(["a", "b"]) == [("a", "b")]
    pairs = ring_pairs(["a", "b", "c", "d"])
    assert pairs == [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")]
    assert all(sum(n in p for p in pairs) == 2 for n in "abcd")


def _pair(a: str, b: str, busbw: float | None) -> CollectiveResult:
    points = (
        [] if busbw is None else [BandwidthPoint(size_bytes=1 << 20, time_us=1.0, algbw_gbps=busbw, busbw_gbps=busbw)]
    )
    return CollectiveResult(name=f"pair-{a}-{b}", nodes=[a, b], backend="gloo", ranks=2, points=points)


def test_pair_analysis_blames_the_node_in_every_slow_pair() -> None:
    results = [_pair("a", "b", 10.0), _pair("b", "c", 0.4), _pair("c", "d", 0.5), _pair("d", "a", 9.0)]
    blamed = analyse_pairs(results)
    assert list(blamed) == ["c"]
    assert "b+c 0.4 GB/s" in blamed["c"] and "c+d 0.5 GB/s" in blamed["c"]
    assert [r.status for r in results] == [Status.PASS, Status.FAIL, Status.FAIL, Status.PASS]


def test_pair_analysis_with_a_threshold_and_a_pair_without_result() -> None:
    results = [_pair("a", "b", 380.0), _pair("b", "c", None), _pair("c", "a", 200.0)]
    blamed = analyse_pairs(results, threshold=350.0)
    assert list(blamed) == ["c"]
    assert results[2].message == "bus bandwidth 200 GB/s < 350 GB/s"


def test_all_fast_pairs_blame_nobody() -> None:
    assert analyse_pairs([_pair("a", "b", 10.0), _pair("b", "c", 9.0), _pair("c", "a", 11.0)]) == {}


def test_two_nodes_name_both_when_their_only_pair_is_slow() -> None:
    blamed = analyse_pairs([_pair("a", "b", 1.0)], threshold=350.0)
    assert sorted(blamed) == ["a", "b"]
    assert "either node may be at fault" in blamed["a"]


def test_the_sku_threshold_fails_a_pair_the_relative_rule_would_pass() -> None:
    """NDR pairs reach 368-384 GB/s; 300 is well above half the best pair, yet below the SKU's 350."""
    results = [_pair("a", "b", 380.0), _pair("b", "c", 300.0), _pair("c", "d", 305.0), _pair("d", "a", 375.0)]
    assert analyse_pairs([r.model_copy(deep=True) for r in results]) == {}
    blamed = analyse_pairs(results, threshold=350.0)
    assert list(blamed) == ["c"]
    assert blamed["c"] == (
        "slow in every ring pair with it: b+c 300 GB/s, c+d 305 GB/s; best pair 380 GB/s; threshold 350 GB/s"
    )
    assert [r.threshold_busbw_gbps for r in results] == [350.0] * 4


def test_when_every_pair_is_under_the_threshold_only_a_relative_outlier_is_blamed() -> None:
    results = [_pair("a", "b", 300.0), _pair("b", "c", 90.0), _pair("c", "d", 95.0), _pair("d", "a", 310.0)]
    assert list(analyse_pairs(results, threshold=350.0)) == ["c"]
    assert all(r.status is Status.FAIL for r in results)


def test_a_uniformly_slow_fabric_fails_every_pair_but_blames_no_node() -> None:
    results = [_pair("a", "b", 200.0), _pair("b", "c", 190.0), _pair("c", "a", 205.0)]
    assert analyse_pairs(results, threshold=350.0) == {}
    assert all(r.status is Status.FAIL for r in results)
    assert results[1].message == (
        "bus bandwidth 190 GB/s < 350 GB/s; every pair is below it and no node stands out: "
        "the fabric or the set-up, not one node"
    )


@pytest.mark.parametrize("threshold", [None, 350.0])
def test_when_no_pair_produced_a_result_no_node_is_blamed(threshold: float | None) -> None:
    """Every pair without a result (NCCL or torch missing on every node, say) is the set-up's fault: draining
    every node for it would empty the partition."""
    results = [_pair("a", "b", None), _pair("b", "c", None), _pair("c", "a", None)]
    assert analyse_pairs(results, threshold) == {}
    assert all(r.status is Status.FAIL for r in results)
    assert all(r.message.endswith("no pair produced a result: the set-up, not one node") for r in results)


@pytest.mark.parametrize(
    ("sku", "overrides", "backend", "threshold"),
    [
        ("Standard_ND96isr_H200_v5", {}, "nccl", 350.0),  # 8 x NDR 400G
        ("standard_nd96isr_h100_v5", {}, "nccl", 350.0),
        ("Standard_ND96amsr_A100_v4", {}, "nccl", 175.0),  # 8 x HDR 200G
        ("Standard_ND96isr_H200_v5", {"internode_allreduce_busbw_gbps": 300.0}, "nccl", 300.0),
        (None, {}, "gloo", None),  # CPU over TCP: no SKU figure, the relative rule applies
        ("Standard_D4s_v5", {}, "gloo", None),
        ("Standard_D4s_v5", {"internode_allreduce_busbw_gbps": 1.5}, "gloo", 1.5),  # an explicit override still does
    ],
)
def test_the_ring_pairs_threshold_comes_from_the_sku_or_the_config(
    sku: str | None, overrides: dict[str, float], backend: str, threshold: float | None
) -> None:
    plan = collective_backend(sku, overrides)
    assert plan["backend"] == backend
    assert plan.get("threshold_busbw_gbps") == threshold


@pytest.mark.parametrize("size", [0, -1])
def test_batch_size_must_be_positive(size: int) -> None:
    with pytest.raises(ValueError):
        batches(["a"], size)


def test_collective_job_script_runs_the_given_interpreter_one_rank_per_gpu(tmp_path: Path) -> None:
    plan = CollectivePlan(
        python="/opt/my env/bin/python", work_dir=tmp_path, **collective_backend("Standard_ND96isr_H100_v5")
    )
    script = collective_job_script(plan, "pair-a-b", tmp_path / "out.json")
    assert "--ntasks-per-node=8" in script
    assert "'/opt/my env/bin/python' -m hpclz.verify.collective_job" in script
    assert "--backend=nccl" in script and "--sizes=1073741824,8589934592" in script
    assert '\nMASTER_ADDR="$(hostname)"\n' in script  # rank 0 runs on the batch host
    assert "export NCCL_ALGO=Ring" in script  # pairs measure the ring, as azurehpc's ring pairs do
    assert "NCCL_ALGO" not in collective_job_script(plan, "all-nodes", tmp_path / "all.json")
    assert collective_backend(None) == {"backend": "gloo"}


def test_throttle_knob_sleeps_inside_the_timed_loop_of_the_named_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One gloo rank, no Slurm: the fault-injection knob must land inside what is timed, on that node only."""
    port = free_ports(1)[0]
    env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    env |= {"SLURMD_NODENAME": "gpu042", THROTTLE_NODE: "gpu042", "HPCLZ_VERIFY_THROTTLE_S": "0.2"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "r.json"
    assert rank_main(["--name=t", f"--out={out}", "--sizes=4096", "--iters=2", "--warmup=0", "--timeout=30"]) == 0
    result = json.loads(out.read_text())
    assert result["ranks"] == 1 and result["backend"] == "gloo"
    assert result["points"][0]["time_us"] >= 0.2e6  # each timed iteration slept 0.2 s first
    monkeypatch.setenv("SLURMD_NODENAME", "gpu001")
    assert throttle_for("gpu001") == 0.0 and throttle_for("gpu042") == 0.2


# sinfo(1) NODE STATE CODES (SchedMD/slurm doc/man/man1/sinfo.1 at 002434c5): the flag characters and the long
# state names %T prints. Only a plain idle node may be handed a verify job now.
NOT_NOW = {
    "idle~": "powered off",
    "idle#": "being powered up",
    "idle!": "pending power down",
    "idle%": "being powered down",
    "idle$": "in a maintenance reservation",
    "idle@": "pending reboot",
    "idle^": "reboot issued",
    "powered_down": "POWERED_DOWN",
    "powering_down": "POWERING_DOWN",
    "powering_up": "POWERING_UP",
    "reboot_issued": "REBOOT_ISSUED",
    "reboot_requested": "REBOOT_REQUESTED",
    "maint": "MAINT",
    "reserved": "RESERVED",
}


@pytest.mark.parametrize("state", sorted(NOT_NOW))
def test_powered_down_rebooting_and_reserved_nodes_are_not_tested(state: str) -> None:
    skipped = select([NodeInfo("n1", state)], drain=False).skipped["n1"]
    assert skipped.checks[0].check_id == NOT_TESTED and skipped.status is Status.NOT_MEASURED
    assert f"Slurm reports it {state}" in skipped.checks[0].message


@pytest.mark.parametrize("state", ["idle-", "mixed-", "planned"])
def test_nodes_planned_by_backfill_count_as_busy(state: str) -> None:
    assert "busy running jobs" in select([NodeInfo("n1", state)], drain=False).skipped["n1"].checks[0].message


@pytest.mark.parametrize("state", ["idle*", "drained*", "down", "inval", "fail"])
def test_non_responding_and_invalid_nodes_are_unreachable(state: str) -> None:
    assert select([NodeInfo("n1", state)], drain=False).skipped["n1"].checks[0].check_id == UNREACHABLE


def test_only_a_plain_idle_node_is_runnable() -> None:
    assert NodeInfo("n1", "idle").schedulable and NodeInfo("n1", "idle~").flags == "~"
    assert select([NodeInfo("n1", "idle")], drain=False).runnable == ["n1"]


def test_states_captured_from_real_slurm_are_sorted_as_slurm_means_them() -> None:
    text = (Path(__file__).parent / "fixtures" / "corpus" / "slurm" / "states.txt").read_text()
    rows = [line.split("|") for line in text.splitlines() if line.startswith("node")]
    infos = {name: NodeInfo(name, long, "" if reason == "none" else reason) for name, long, _short, reason in rows}
    chosen = select(infos.values(), drain=False)
    assert chosen.runnable == ["node4"]
    assert chosen.skipped["node1"].checks[0].check_id == NOT_TESTED  # an operator's drain: not ours to judge
    assert chosen.skipped["node2"].checks[0].check_id == UNREACHABLE
    assert chosen.skipped["node3"].checks[0].message == "not tested: Slurm reports it reserved"
