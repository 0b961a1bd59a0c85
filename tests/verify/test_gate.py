"""The health gate: the watchdog bounds a hung or slow agent, and each tier drains (or not) through real Slurm."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpclz.slurm.client import SlurmClient
from hpclz.verify.gate import FAIL, INCONCLUSIVE, PASS, Gate, build, decide, job_gpus, main, prolog_budget, run_bounded
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm
from tests.verify.helpers import FAULTS, GOOD

slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm


def agent(fixtures: Path) -> list[str]:
    return [sys.executable, "-m", "hpclz.verify.agent", "--fixtures", str(fixtures)]


# An agent stand-in that hangs: a shell whose child and grandchild sleep (extra arguments land in $0, $1...).
HUNG = ["bash", "-c", "sleep 300 & sleep 300"]


@pytest.fixture
def slurm(clean_slurm: LocalSlurm) -> SlurmClient:
    return SlurmClient(conf=clean_slurm.conf, extra_env=clean_slurm.job_env)


def reason(slurm: SlurmClient, node: str) -> tuple[str, str]:
    [info] = slurm.nodes(nodelist=node)
    return info.state, info.reason


def test_the_watchdog_kills_the_whole_group_of_a_hung_command(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    bounded = run_bounded(["bash", "-c", f"sleep 300 & echo $! > {pids}; sleep 300"], budget_s=0.5)
    assert bounded.timed_out and bounded.rc is None
    grandchild = int(pids.read_text())
    stat = Path(f"/proc/{grandchild}/stat")

    def dead() -> bool:  # gone, or dead and waiting to be reaped
        try:
            return stat.read_text().split()[2] == "Z"
        except (FileNotFoundError, ProcessLookupError):
            return True

    # SIGKILL is delivered when the process next runs: on a loaded machine it may still show R a moment after
    # killpg returned. Waiting is not what is tested; a process left alive is.
    for _ in range(100):
        if dead():
            break
        time.sleep(0.05)
    assert dead()


def test_a_hung_agent_is_inconclusive_not_a_device_fault(tmp_path: Path) -> None:
    decision = decide(run_bounded(HUNG, budget_s=0.3), tmp_path / "none.json", 0.3)
    assert decision.outcome == INCONCLUSIVE and "did not finish within 0.3 s" in decision.reason


def test_an_agent_that_fails_without_a_report_is_inconclusive(tmp_path: Path) -> None:
    # It printed a good reading, then died of SIGSEGV (Popen reports -11) before it wrote its report.
    crashed = ["bash", "-c", "echo 'GPU 0 ok'; kill -SEGV $$"]
    decision = decide(run_bounded(crashed, budget_s=30), tmp_path / "r.json", 30)
    assert decision.outcome == INCONCLUSIVE
    assert decision.reason == "health agent exited -11 with no report: GPU 0 ok"


@pytest.mark.parametrize(("folder", "outcome"), [(GOOD, PASS), (FAULTS / "xid79", FAIL)])
def test_decide_reads_the_agents_report(tmp_path: Path, folder: Path, outcome: str) -> None:
    argv = [*agent(folder), "--tier", "health", "--json", str(tmp_path / "r.json")]
    assert decide(run_bounded(argv, budget_s=60), tmp_path / "r.json", 60).outcome == outcome


def test_prolog_drains_a_faulty_node_and_fails_so_the_job_goes_elsewhere(slurm: SlurmClient) -> None:
    status, line = Gate("prolog", "node2", 30, agent(FAULTS / "xid79"), slurm).run()
    assert status == 1 and "HPCLZ-VFY-006" in line
    state, why = reason(slurm, "node2")
    assert state == "drained" and why.startswith("hpclz: gate prolog failed: HPCLZ-VFY-006 Xid 79")


def test_prolog_with_a_hung_agent_lets_the_job_run_and_drains_for_a_retest(slurm: SlurmClient) -> None:
    status, line = Gate("prolog", "node3", 0.5, HUNG, slurm).run()
    assert status == 0 and "inconclusive" in line
    assert reason(slurm, "node3") == (
        "drained",
        "hpclz: gate prolog inconclusive, re-test: health agent did not finish within 0.5 s (killed)",
    )


def test_boot_tier_says_no_to_anything_but_a_pass(slurm: SlurmClient) -> None:
    """The Scheduled Events watcher resumes a node only on exit 0: a hung agent (inconclusive) drains for a re-test
    and exits 1, unlike the prolog, which lets the job run then."""
    status, line = Gate("boot", "node3", 0.5, HUNG, slurm).run()
    assert status == 1 and "inconclusive" in line
    assert reason(slurm, "node3")[1].startswith("hpclz: gate boot inconclusive, re-test")
    assert Gate("boot", "node1", 30, agent(GOOD), slurm).run() == (0, "hpclz gate boot: node1 healthy")


def test_prolog_passes_a_healthy_node_untouched(slurm: SlurmClient) -> None:
    assert Gate("prolog", "node1", 30, agent(GOOD), slurm).run()[0] == 0
    assert reason(slurm, "node1") == ("idle", "")


def test_passive_waits_for_a_second_failing_reading(slurm: SlurmClient, tmp_path: Path) -> None:
    gate = Gate("passive", "node4", 30, agent(FAULTS / "ib-port-down"), slurm, confirm=2, state=tmp_path)
    status, line = gate.run()
    assert status == 0 and "failed once, not drained yet" in line
    assert reason(slurm, "node4") == ("idle", "")
    healthy = Gate("passive", "node4", 30, agent(GOOD), slurm, confirm=2, state=tmp_path)
    assert healthy.run()[0] == 0  # a passing reading in between starts the count again
    gate.run()
    assert reason(slurm, "node4") == ("idle", "")
    gate.run()
    assert reason(slurm, "node4")[1].startswith("hpclz: gate passive failed: HPCLZ-VFY-011")


def test_passive_drains_on_the_first_xid(
    slurm: SlurmClient, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    spool = tmp_path_factory.mktemp("spool")
    Gate("passive", "node4", 30, agent(FAULTS / "xid79"), slurm, state=tmp_path, spool=spool).run()
    assert reason(slurm, "node4")[1].startswith("hpclz: gate passive failed: HPCLZ-VFY-006")
    [left] = spool.iterdir()
    assert left.name.startswith("node4-") and '"HPCLZ-VFY-006"' in left.read_text()


def test_passive_waits_for_a_second_inconclusive_reading_too(slurm: SlurmClient, tmp_path: Path) -> None:
    gate = Gate("passive", "node3", 0.5, HUNG, slurm, confirm=2, state=tmp_path)
    status, line = gate.run()
    assert status == 0 and "inconclusive once, not drained yet" in line
    assert reason(slurm, "node3") == ("idle", "")
    gate.run()
    assert reason(slurm, "node3")[1].startswith("hpclz: gate passive inconclusive, re-test")


def test_a_node_healthagent_drained_keeps_its_reason(slurm: SlurmClient, clean_slurm: LocalSlurm) -> None:
    theirs = "Healthcheck failures. Run 'health -s' view health report."
    clean_slurm.client("scontrol", "update", "NodeName=node2", "State=DRAIN", f"Reason={theirs}")
    status, line = Gate("epilog", "node2", 30, agent(FAULTS / "xid79"), slurm).run()
    assert status == 0 and "left drained by its owner" in line
    assert reason(slurm, "node2") == ("drained", theirs)


def test_a_budget_at_or_over_slurms_limit_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["passive", "--budget", "60"]) == 2
    assert main(["prolog", "--budget", "30", "--prolog-timeout", "30"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: --budget 60 s must be below 60 s for the passive tier",
        "error: --budget 30 s must be below 30 s for the prolog tier",
    ]


def test_the_prolog_budget_grows_with_the_jobs_gpus_and_stays_under_the_timeout() -> None:
    # SLURM_JOB_GPUS is a comma list of the job's GPU IDs on this node (slurm.conf(5), Prolog and Epilog Scripts).
    assert [job_gpus(v) for v in (None, "", "3", "0,1,2,3,4,5,6,7")] == [0, 0, 1, 8]
    assert prolog_budget(10, 1.25, 0, 60) == 10
    assert prolog_budget(10, 1.25, 8, 60) == 20
    # 10 + 8 x 5 = 50 s would outlive PrologEpilogTimeout=30 less its margin (3 s, a tenth): capped at 27 s.
    assert prolog_budget(10, 5, 8, 30) == 27
    assert prolog_budget(1, 0, 0, 3) == 1  # the margin's floor is 2 s: 3 - 2 = 1
    assert prolog_budget(10, 5, 8, None) == 50  # no timeout configured: Slurm waits indefinitely


def budget_of(argv: list[str]) -> float:
    gate = build(argv)
    assert isinstance(gate, Gate), gate
    return gate.budget_s


def test_the_prolog_reads_the_jobs_gpus_from_slurm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_GPUS", "0,1,2,3")
    argv = ["prolog", "--budget", "10", "--per-gpu", "2", "--prolog-timeout", "60", "--node", "n1"]
    assert budget_of(argv) == 18
    monkeypatch.setenv("SLURM_JOB_GPUS", "0,1,2,3,4,5,6,7")
    assert budget_of([*argv[:-4], "--prolog-timeout", "20", "--node", "n1"]) == 18  # 26 capped at 20 - 2


def test_an_error_inside_the_gate_never_fails_the_job(tmp_path: Path) -> None:
    """An exception inside the gate is no verdict on the node: here its spool is a file, not a folder, so leaving the
    failing report there raises (after the drain, which finds no Slurm here and says so). Its own process, as slurmd
    starts it: the budget counts from the process's start."""
    spool = tmp_path / "spool"
    spool.write_text("")
    argv = [
        "prolog",
        "--budget",
        "30",
        "--node",
        "n9",
        "--spool",
        str(spool),
        "--",
        "--fixtures",
        str(FAULTS / "xid79"),
    ]
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    ran = subprocess.run(
        [sys.executable, "-m", "hpclz.verify.gate", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.startswith("hpclz gate prolog: n9 not checked: FileExistsError:"), ran.stdout
