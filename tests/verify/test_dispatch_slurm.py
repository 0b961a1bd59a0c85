"""`hpclz verify` through a real Slurm on localhost: fan-out, no-result nodes, drain/resume, collectives.

Nodes get injected readings: HPCLZ_VERIFY_FIXTURES holds one folder per node (named like SLURMD_NODENAME),
each pointing at the node agent's good H200 fixture or a faulty variant of it (tests/verify/fixtures).
"""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from hpclz.config.loader import load_config
from hpclz.slurm.client import SlurmClient
from hpclz.verify.collective_job import THROTTLE_NODE, THROTTLE_S
from hpclz.verify.dispatch import JOB_NOT_RUN, FanOut, fan_out, settle
from hpclz.verify.model import Status
from hpclz.verify.session import agent_command
from tests.conftest import REPO, CliResult
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm

pytestmark = pytest.mark.slurm
slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm

FIXTURES = REPO / "tests" / "verify" / "fixtures"
GOOD = FIXTURES / "h200-good"
XID79 = FIXTURES / "h200-faults" / "xid79"
CONFIG = REPO / "configs" / "ai-training.yaml"


def plant(root: Path, readings: dict[str, Path]) -> Path:
    """Give each node its readings; re-planting a node swaps them (a repaired node)."""
    for node, source in readings.items():
        (root / node).mkdir(parents=True, exist_ok=True)
        (root / node / "fixtures.base").write_text(os.path.relpath(source, root / node))
    return root


@pytest.fixture
def cluster_env(clean_slurm: LocalSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LocalSlurm:
    """This process's environment is what sbatch exports to the jobs: point it at the test cluster."""
    for key, value in clean_slurm.job_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HPCLZ_VERIFY_FIXTURES", str(tmp_path / "readings"))
    monkeypatch.setenv("HPCLZ_VERIFY_MASTER_ADDR", "127.0.0.1")  # node1..3 are names only Slurm knows
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    return clean_slurm


@pytest.fixture
def client(cluster_env: LocalSlurm) -> SlurmClient:
    return SlurmClient(conf=cluster_env.conf)


def test_fan_out_collects_every_nodes_report_across_jobs(client: SlurmClient, tmp_path: Path) -> None:
    plant(tmp_path / "readings", {"node1": GOOD, "node2": XID79, "node3": GOOD})
    command = agent_command(load_config(CONFIG).config, sys.executable, None, nccl=False)
    plan = FanOut(command=command, work_dir=tmp_path / "run", node_budget_s=60, max_nodes_per_job=2)
    reports = fan_out(client, ["node1", "node2", "node3"], plan)
    assert sorted(reports) == ["node1", "node2", "node3"]
    assert [r.node for r in reports.values() if r.failures()] == ["node2"]
    [failure] = reports["node2"].failures()
    assert failure.check_id == "HPCLZ-VFY-006"
    assert failure.message == "Xid 79 (GPU has fallen off the bus) on GPU 2 (00000003:00:00.0)"
    assert reports["node1"].sku == "Standard_ND96isr_H200_v5"
    assert sorted(p.name for p in (tmp_path / "run").glob("job-*.out")) == ["job-0.out", "job-1.out"]


def test_a_node_that_hangs_or_dies_is_a_failure_not_a_gap(client: SlurmClient, tmp_path: Path) -> None:
    report = '{"node": "x", "checks": [{"check_id": "HPCLZ-VFY-001", "title": "t", "status": "pass"}]}'
    script = (
        'case "$SLURMD_NODENAME" in '
        "node2) sleep 60;; "
        "node3) kill -9 $(ps -o ppid= $PPID);; "  # the per-node wrapper (above `timeout`) dies before it writes
        f"*) echo '{report}';; esac"
    )
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "node3.rc").write_text("0\n")  # left by an earlier run in the same --work-dir
    (tmp_path / "run" / "node3.stdout").write_text(report)
    plan = FanOut(command=["bash", "-c", script], work_dir=tmp_path / "run", node_budget_s=2)
    reports = fan_out(client, ["node1", "node2", "node3"], plan)
    assert reports["node1"].status is Status.PASS
    assert reports["node2"].checks[0].message.startswith("timed out after 2 s")
    assert reports["node3"].checks[0].message == "no result within 2 s: the job ended without it"


def test_a_job_that_cannot_start_in_time_is_cancelled_and_says_why(
    client: SlurmClient, cluster_env: LocalSlurm, tmp_path: Path
) -> None:
    # A user's job holds node3 (it became busy after hpclz chose its nodes): the verify job cannot start.
    blocker = cluster_env.client(
        "sbatch", "--parsable", "-w", "node3", "-o", "/dev/null", "--wrap", "sleep 300"
    ).strip()
    try:
        plan = FanOut(command=["true"], work_dir=tmp_path / "run", node_budget_s=30, queue_wait_s=1)
        reports = fan_out(client, ["node1", "node3"], plan)
    finally:
        cluster_env.client("scancel", blocker)
    expected = "no result within 30 s: its job waited more than 1 s for the nodes (busy, or held) and was cancelled"
    assert {n: r.checks[0].message for n, r in reports.items()} == {"node1": expected, "node3": expected}
    assert reports["node1"].checks[0].check_id == JOB_NOT_RUN  # not the node's fault: never drained for it
    assert settle(client, reports, {i.name: i for i in client.nodes()}) == ([], [])
    jobs = cluster_env.client("squeue", "-h", "-t", "all", "-n", "hpclz-verify", "-o", "%i %T").splitlines()
    newest = max((ln.split() for ln in jobs), key=lambda f: int(f[0]))
    assert newest[1] == "CANCELLED"


def _verify(run_cli: Callable[..., CliResult], tmp_path: Path, *args: str) -> CliResult:
    conf = os.environ["SLURM_CONF"]
    # The nodes run this venv's interpreter, named explicitly: a bare `python3` there would lack torch and hpclz.
    return run_cli("verify", str(CONFIG), "-p", "gpu", "--slurm-conf", conf, "--python", sys.executable, *args)


def test_verify_nccl_finds_the_planted_bad_nodes_says_why_drains_them_and_reports_for_ci_and_people(
    cluster_env: LocalSlurm, run_cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two planted faults: node4's kernel log has an Xid 79 (the node checks see it); node2's readings are fine
    # but its interconnect is slow, which only the ring pairs can see.
    plant(tmp_path / "readings", {"node1": GOOD, "node2": GOOD, "node3": GOOD, "node4": XID79})
    monkeypatch.setenv(THROTTLE_NODE, "node2")
    monkeypatch.setenv(THROTTLE_S, "0.2")  # far above a 1 MiB gloo all-reduce on loopback, even on a busy host
    junit, work = tmp_path / "verify.xml", tmp_path / "w"
    jobs_before = _jobs(cluster_env)
    result = _verify(run_cli, tmp_path, "--nccl", "--drain", "--junit", str(junit), "--work-dir", str(work))
    ours = {job: part for job, part in _jobs(cluster_env).items() if job not in jobs_before}
    assert len(ours) == 5 and set(ours.values()) == {"gpu"}  # health, three pairs, all-nodes; never the default

    # For people: one line per bad node saying what is wrong, what was drained, and the tally.
    assert result.exit_code == 6, result.stderr
    bad = {ln.split(":")[0]: ln for ln in result.stdout.splitlines() if ln.startswith("bad node ")}
    assert sorted(bad) == ["bad node node2", "bad node node4"]
    assert bad["bad node node4"] == (
        "bad node node4: HPCLZ-VFY-006 Fatal Xid events in the kernel log: "
        "Xid 79 (GPU has fallen off the bus) on GPU 2 (00000003:00:00.0)"
    )
    assert bad["bad node node2"].startswith(
        "bad node node2: HPCLZ-VFY-910 Inter-node all-reduce (ring pairs): slow in every ring pair with it: "
    )
    assert "node1+node2" in bad["bad node node2"] and "node2+node3" in bad["bad node node2"]
    assert "drained: node4, node2" in result.stdout and "2 of 4 nodes passed" in result.stdout

    # For Slurm: both drained, each with a reason that says why.
    reasons = dict(
        line.split("|", 1)
        for line in cluster_env.client("sinfo", "-h", "-N", "-p", "gpu", "-o", "%N|%T %E").splitlines()
    )
    assert (
        reasons["node4"]
        == "drained hpclz: HPCLZ-VFY-006 Xid 79 (GPU has fallen off the bus) on GPU 2 (00000003:00:00.0)"
    )
    assert reasons["node2"].startswith("drained hpclz: HPCLZ-VFY-910 slow in every ring pair with it: ")
    # Not drained and no reason. "planned" is idle too: the backfill scheduler has earmarked the node for a job
    # still pending (Slurm 22.05+ node state PLANNED, https://slurm.schedmd.com/sinfo.html#SECTION_NODE-STATE-CODES),
    # which happens on a loaded host while the previous test's jobs drain out of the queue.
    assert {reasons["node1"], reasons["node3"]} <= {"idle none", "planned none"}

    # For CI: JUnit with a failing case per fault and per slow pair.
    suites = {s.get("name"): s for s in ET.parse(junit).getroot().iter("testsuite")}
    assert suites["node node1"].get("failures") == "0" and suites["node node3"].get("failures") == "0"
    for node, words in (("node2", "slow in every ring pair"), ("node4", "GPU has fallen off the bus")):
        [failure] = suites[f"node {node}"].iter("failure")
        assert words in (failure.get("message") or "")
    runs = {c.get("name"): c.find("failure") is None for c in suites["collectives"].iter("testcase")}
    assert runs == {"pair-node1-node2": False, "pair-node2-node3": False, "pair-node3-node1": True, "all-nodes": True}

    everyone = json.loads((work / "collectives" / "all-nodes.json").read_text())
    assert everyone["ranks"] == 2 and everyone["backend"] == "gloo"  # srun -N2, one gloo rank per Slurm node
    [point] = everyone["points"]
    assert point["busbw_gbps"] == pytest.approx(point["algbw_gbps"])  # bus factor 2(n-1)/n is 1 for two ranks


def _jobs(cluster: LocalSlurm) -> dict[str, str]:
    return dict(line.split() for line in cluster.client("squeue", "-h", "-t", "all", "-o", "%i %P").splitlines())


def test_a_node_just_resumed_is_tested_in_the_partition_asked_for(
    cluster_env: LocalSlurm, run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """Right after a resume slurmctld shows the node `idle*` until its ping returns, so verify looks at it
    again; that second look must keep the partition it was selected through (node1 is in the default too)."""
    plant(tmp_path / "readings", {"node1": GOOD})
    cluster_env.client("scontrol", "update", "NodeName=node1", "State=DOWN", "Reason=test")
    cluster_env.client("scontrol", "update", "NodeName=node1", "State=RESUME")
    jobs_before = _jobs(cluster_env)
    result = _verify(run_cli, tmp_path, "--nodes", "node1")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert {part for job, part in _jobs(cluster_env).items() if job not in jobs_before} == {"gpu"}


def test_a_drained_node_is_resumed_once_it_passes_and_operator_drains_stay(
    cluster_env: LocalSlurm, run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    readings = plant(tmp_path / "readings", {"node1": GOOD, "node2": XID79, "node3": GOOD, "node4": GOOD})
    cluster_env.client("scontrol", "update", "NodeName=node3", "State=DRAIN", "Reason=bad DIMM, ticket 42")

    first = json.loads(_verify(run_cli, tmp_path, "--drain", "-o", "json").stdout)
    assert first["exit_code"] == 6
    assert first["result"]["drained"] == ["node2"]
    assert list(first["result"]["bad_nodes"]) == ["node2"]

    still_bad = json.loads(_verify(run_cli, tmp_path, "--drain", "-o", "json").stdout)  # re-tested, drained again
    assert still_bad["result"]["drained"] == ["node2"] and still_bad["result"]["resumed"] == []

    plant(readings, {"node2": GOOD})  # the node was repaired
    untouched = _verify(run_cli, tmp_path)  # without --drain a node hpclz drained is left alone, and said so
    assert untouched.exit_code == 0
    assert "✓ 2 of 4 nodes passed, 2 not tested" in untouched.stdout
    second = json.loads(_verify(run_cli, tmp_path, "--drain", "-o", "json").stdout)
    assert second["exit_code"] == 0, second
    assert second["result"]["resumed"] == ["node2"] and second["result"]["drained"] == []
    states = dict(ln.split("|", 1) for ln in cluster_env.client("sinfo", "-h", "-N", "-o", "%N|%T|%E").splitlines())
    assert states["node2"].startswith("idle")
    assert states["node3"] == "drained|bad DIMM, ticket 42"  # not ours to resume
    node3 = next(n for n in second["result"]["nodes"] if n["node"] == "node3")
    assert node3["checks"][0]["status"] == "not_measured"
    assert cluster_env.client("scontrol", "show", "reservation").strip() == "No reservations in the system"


def test_unknown_partition_and_foreign_nodes_are_usage_errors(
    cluster_env: LocalSlurm, run_cli: Callable[..., CliResult]
) -> None:
    conf = os.environ["SLURM_CONF"]
    # The preset's partitions (h100, h200) do not exist on the test cluster.
    no_partition = run_cli("verify", str(CONFIG), "--slurm-conf", conf)
    assert no_partition.exit_code == 64
    assert no_partition.stderr.startswith("error: Slurm partition 'h100' has no nodes (sinfo -p h100)")
    foreign = run_cli("verify", str(CONFIG), "-p", "debug", "--nodes", "node[4-5]", "--slurm-conf", conf)
    assert foreign.exit_code == 64
    assert foreign.stderr == "error: --nodes node[4-5]: not in partition(s) debug: node5\n"


def test_a_suppressed_check_drains_nothing_and_is_reported_suppressed(
    cluster_env: LocalSlurm, run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    plant(tmp_path / "readings", {"node1": GOOD, "node2": XID79})
    result = json.loads(
        _verify(
            run_cli, tmp_path, "--nodes", "node[1-2]", "--drain", "--suppress", "HPCLZ-VFY-006", "-o", "json"
        ).stdout
    )
    assert result["exit_code"] == 0 and result["result"]["drained"] == [] and result["result"]["bad_nodes"] == {}
    assert result["result"]["suppressed"] == ["HPCLZ-VFY-006"]
    states = dict(ln.split("|", 1) for ln in cluster_env.client("sinfo", "-h", "-N", "-o", "%N|%T").splitlines())
    assert states["node2"] == "idle"
