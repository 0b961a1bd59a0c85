"""kill -9 in the middle of a deployment, then resume: re-attach to what ARM still runs, never resubmit it.
Two deploys at once on the local backend: the second is refused and told who holds the lock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import RunCli
from tests.deploy.conftest import HPCLZ, left_after_destroy, our_groups, state_of
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.world import DeploymentRun

pytestmark = pytest.mark.slow  # each test waits on a deployment the stand-in holds running for seconds

STORAGE = "hpclz-aitrain-prod-storage"
SLOW_TYPE = "microsoft.storagecache/amlfilesystems"
FLOWLOGS = "hpclz-aitrain-prod-flowlogs"
FLOW_LOG = "Microsoft.Network/networkWatchers/flowLogs"


def _start_deploy(zone: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*HPCLZ, "deploy", str(zone), "--yes"],
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_until_recorded_running(zone: Path, name: str, proc: subprocess.Popen[str], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"deploy ended early: {proc.communicate()}"
        for file in (zone.parent / ".hpclz").rglob("state.json"):
            record = json.loads(file.read_text()).get("deployments", {}).get(name)
            if record and record["status"] == "running" and record["arm_id"]:
                return
        time.sleep(0.05)
    raise AssertionError(f"{name} never recorded as running")


def test_kill_9_mid_deploy_then_resume_reattaches(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.world.latency[SLOW_TYPE] = 2.0
    proc = _start_deploy(zone)
    _wait_until_recorded_running(zone, STORAGE, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    run = next(r for k, r in arm.world.deployments.items() if k.endswith(STORAGE))
    assert run.state in ("Accepted", "Running")
    puts_before = sum(1 for r in arm.log if r.method == "PUT" and r.path.endswith(STORAGE))

    resumed = run_cli("deploy", str(zone), "--yes")
    assert resumed.exit_code == 0, resumed.stderr + resumed.stdout
    assert f"{STORAGE}: attached" in resumed.stderr
    assert sum(1 for r in arm.log if r.method == "PUT" and r.path.endswith(STORAGE)) == puts_before == 1
    assert run.state == "Succeeded"


def test_second_concurrent_deploy_is_refused_with_the_holder(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.world.latency[SLOW_TYPE] = 2.0
    proc = _start_deploy(zone)
    try:
        _wait_until_recorded_running(zone, STORAGE, proc)
        second = run_cli("deploy", str(zone), "--yes")
        assert second.exit_code == 4
        assert "deploy" in second.stderr and str(proc.pid) in second.stderr
    finally:
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


def test_ctrl_c_releases_the_lock_and_leaves_a_resumable_state(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.world.latency[SLOW_TYPE] = 2.0
    proc = _start_deploy(zone)
    _wait_until_recorded_running(zone, STORAGE, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert f"{STORAGE} still running in Azure (recorded in state)" in err

    resumed = run_cli("deploy", str(zone), "--yes")
    assert resumed.exit_code == 0, resumed.stderr
    assert f"{STORAGE}: attached" in resumed.stderr


def _without_accounting(zone: Path) -> None:
    """Without the preset's accounting server, which deploys beside storage: these tests follow storage's run."""
    text = zone.read_text()
    start = text.index("  accounting:\n")
    end = text.index("  partitions:\n", start)
    zone.write_text(text[:start] + "  accounting: {mode: disabled}\n" + text[end:])


def _kill_9(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def _flow_logs(arm: ArmStandIn) -> list[str]:
    return [k for k, r in arm.world.resources.items() if r["type"] == FLOW_LOG]


def _nested_flowlog_run(arm: ArmStandIn) -> DeploymentRun:
    return next(r for k, r in arm.world.deployments.items() if k.startswith("networkwatcherrg|"))


def test_destroy_right_after_kill_9_cancels_the_runs_and_deletes_what_they_made_outside_our_groups(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    """The race the kill leaves: storage's and flow logs' runs still going in ARM, recorded as running. Destroy cancels
    both (Deployments - Cancel) before it deletes anything and takes in what they made, the flow log in
    NetworkWatcherRG included, which no hpclz group holds."""
    _without_accounting(zone)
    assert "flow_logs: {enabled: true" in zone.read_text()
    arm.world.latency[SLOW_TYPE] = 4.0  # long enough that both still run when destroy starts
    arm.world.latency[FLOW_LOG.lower()] = 4.0
    proc = _start_deploy(zone)
    _wait_until_recorded_running(zone, STORAGE, proc)
    _wait_until_recorded_running(zone, FLOWLOGS, proc)
    _kill_9(proc)
    runs = {name: next(r for k, r in arm.world.deployments.items() if k.endswith(name)) for name in (STORAGE, FLOWLOGS)}
    assert {r.state for r in runs.values()} <= {"Accepted", "Running"}
    # The flow log is made by the flow logs run's nested run, a deployment of its own in NetworkWatcherRG, in flight
    # (provisioning the flow log) when the deploy was killed; the outer run's operations name only that deployment.
    nested = _nested_flowlog_run(arm)
    assert nested.state == "Running" and nested.resource_group == "NetworkWatcherRG"
    outer_targets = [o["properties"]["targetResource"]["resourceType"] for o in runs[FLOWLOGS].operations]
    assert FLOW_LOG not in outer_targets and "Microsoft.Resources/deployments" in outer_targets

    kept = run_cli("destroy", str(zone), "--yes")
    assert kept.exit_code == 0, kept.stdout + kept.stderr
    for name, run in runs.items():
        assert f"in flight {name}: Running in ARM, recorded in state as running" in kept.stderr, kept.stderr
        assert any(r.method == "POST" and r.path.endswith(f"{name}/cancel") for r in arm.log)
        assert run.state == "Canceled", (name, kept.stderr, [r for r in arm.log if "cancel" in r.path])
    # Cancelling the outer run promises nothing for a nested one: destroy cancels the nested run itself.
    assert any(r.method == "POST" and r.path.lower() == f"{nested.id}/cancel".lower() for r in arm.log)
    assert nested.state == "Canceled"
    # Provisioning when the cancel came, the flow log and the Lustre file system exist: both were recorded.
    assert _flow_logs(arm) == [], kept.stderr  # outside hpclz's groups, found only through the cancelled nested run
    assert "kept Microsoft.StorageCache/amlFilesystems" in kept.stderr, kept.stderr
    assert "rg-aitrain-storage-prod-eus2 (holds kept" in kept.stderr, kept.stderr

    gone = run_cli("destroy", str(zone), "--yes", "--include-data")
    assert gone.exit_code == 0, gone.stdout + gone.stderr
    assert "in flight" not in gone.stderr  # the runs the first destroy settled are not read back from ARM's history
    assert our_groups(arm) == {} and left_after_destroy(arm) == []


def test_destroy_takes_in_a_run_whose_submit_the_killed_deploy_never_heard_back_from(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    """kill -9 between ARM starting a run and hpclz recording it: state has no record of the flow logs deployment,
    ARM has the run; destroy finds it under the zone's deployment name and deletes the flow log it made."""
    _without_accounting(zone)
    arm.slow_put_answer[FLOWLOGS] = 30.0
    proc = _start_deploy(zone)
    deadline = time.monotonic() + 60
    while not any(k.endswith(FLOWLOGS) for k in arm.world.deployments):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    _kill_9(proc)
    run = next(r for k, r in arm.world.deployments.items() if k.endswith(FLOWLOGS))
    while run.state in ("Accepted", "Running"):
        time.sleep(0.05)
    assert FLOWLOGS not in state_of(zone)["deployments"] and _flow_logs(arm)

    gone = run_cli("destroy", str(zone), "--yes", "--include-data")
    assert gone.exit_code == 0, gone.stdout + gone.stderr
    assert f"in flight {FLOWLOGS}: Succeeded in ARM, run by a deploy that state never saw finish" in gone.stderr
    assert _flow_logs(arm) == []
    assert our_groups(arm) == {} and left_after_destroy(arm) == []

    again = run_cli("destroy", str(zone), "--yes", "--include-data", "-o", "json")
    assert again.exit_code == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["result"]["in_flight"] == []
