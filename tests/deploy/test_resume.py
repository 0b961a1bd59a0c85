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

from tests.deploy.conftest import HPCLZ, left_after_destroy, our_groups
from tests.support.arm_standin import ArmStandIn

pytestmark = pytest.mark.slow  # each test waits on a deployment the stand-in holds running for seconds

STORAGE = "hpclz-aitrain-prod-storage"
SLOW_TYPE = "microsoft.storagecache/amlfilesystems"


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


def test_kill_9_mid_deploy_then_resume_reattaches(arm: ArmStandIn, zone: Path, run_cli) -> None:
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


def test_second_concurrent_deploy_is_refused_with_the_holder(arm: ArmStandIn, zone: Path, run_cli) -> None:
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


def test_ctrl_c_releases_the_lock_and_leaves_a_resumable_state(arm: ArmStandIn, zone: Path, run_cli) -> None:
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


def test_destroy_right_after_kill_9_keeps_unrecorded_data_and_removes_the_rest(
    arm: ArmStandIn, zone: Path, run_cli
) -> None:
    # Without the preset's accounting server, which deploys beside storage and, recorded, would keep the storage
    # group by itself: this test is about the group kept for the Lustre file system state never recorded.
    text = zone.read_text()
    start = text.index("  accounting:\n")
    end = text.index("  partitions:\n", start)
    text = text[:start] + "  accounting: {mode: disabled}\n" + text[end:]
    # Without flow logs either: their deployment races storage's, and a flow log created by a deployment still in
    # flight at the kill sits in NetworkWatcherRG, outside hpclz's groups, where destroy finds only what state
    # recorded (a known gap: destroy does not yet read the outputResources of deployments recorded as running).
    flow_logs = "  flow_logs: {enabled: true, retention_days: 90, traffic_analytics_interval_minutes: 10}\n"
    assert flow_logs in text
    zone.write_text(text.replace(flow_logs, ""))
    arm.world.latency[SLOW_TYPE] = 1.0
    proc = _start_deploy(zone)
    _wait_until_recorded_running(zone, STORAGE, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    run = next(r for k, r in arm.world.deployments.items() if k.endswith(STORAGE))
    while run.state in ("Accepted", "Running"):
        time.sleep(0.05)

    kept = run_cli("destroy", str(zone), "--yes")
    assert kept.exit_code == 0, kept.stdout + kept.stderr
    assert "rg-aitrain-storage-prod-eus2 (holds unrecorded data" in kept.stderr, kept.stderr
    assert any(r["type"] == "Microsoft.StorageCache/amlFilesystems" for r in arm.world.resources.values())

    gone = run_cli("destroy", str(zone), "--yes", "--include-data")
    assert gone.exit_code == 0, gone.stdout + gone.stderr
    assert our_groups(arm) == {} and left_after_destroy(arm) == []
