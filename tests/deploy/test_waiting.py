"""Bounded waiting: a huge Retry-After is capped and counted down, Ctrl-C ends a wait at once and leaves
state resumable, and a deployment ARM never finishes stops being followed after its budget."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from hpclz.azure.errors import WaitCancelled
from hpclz.azure.waiting import BoundedRetryPolicy
from hpclz.deploy.timeouts import deployment_budget
from tests.conftest import RunCli
from tests.deploy.conftest import HPCLZ, state_of
from tests.support.arm_standin import ArmStandIn, Fault

STORAGE = "hpclz-aitrain-prod-storage"


def test_retry_after_of_an_hour_is_capped_and_shown(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ARM's throttling answer: 429 with Retry-After in seconds
    # (https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling).
    monkeypatch.setenv("HPCLZ_RETRY_AFTER_CAP", "1")
    throttle = Fault("throttle", method="PUT", path=rf"/deployments/{STORAGE}$", times=1, retry_after=3600)
    arm.faults.add(throttle)
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr
    assert throttle.fired == 1
    assert "ARM answered 429 (Retry-After 3600 s capped at 1 s): retrying in 1 s" in result.stderr


def test_first_ctrl_c_ends_a_throttled_wait_at_once(arm: ArmStandIn, zone: Path) -> None:
    arm.faults.add(Fault("throttle", method="PUT", path=rf"/deployments/{STORAGE}$", times=1, retry_after=3600))
    proc = subprocess.Popen(
        [*HPCLZ, "deploy", str(zone), "--yes"],
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not any(r.status == 429 for r in arm.log):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        # Without the fix this waits out the whole (capped) Retry-After of 120 s and more.
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "rerun `hpclz deploy" in err
    assert not any(r.method == "PUT" and r.path.endswith(STORAGE) and r.status < 300 for r in arm.log)


def test_a_deployment_that_never_ends_times_out_and_resumes(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    arm.world.latency["microsoft.storagecache/amlfilesystems"] = 1.5
    monkeypatch.setenv("HPCLZ_DEPLOY_TIMEOUT", "0.2")
    stopped = run_cli("deploy", str(zone), "--yes")
    assert stopped.exit_code == 5, stopped.stderr + stopped.stdout
    assert "DeploymentTimeout: still Running after" in stopped.stdout + stopped.stderr
    assert state_of(zone)["deployments"][STORAGE]["status"] == "running"  # ARM carries on: resumable

    monkeypatch.delenv("HPCLZ_DEPLOY_TIMEOUT")
    resumed = run_cli("deploy", str(zone), "--yes")
    assert resumed.exit_code == 0, resumed.stderr
    assert f"{STORAGE}: attached" in resumed.stderr


def test_budget_is_the_slowest_declared_type() -> None:
    seconds, slowest = deployment_budget(["Microsoft.Network/virtualNetworks", "Microsoft.StorageCache/amlFilesystems"])
    assert slowest == "Microsoft.StorageCache/amlFilesystems" and seconds == 120 * 60
    assert deployment_budget(["Microsoft.Network/virtualNetworks"])[0] == 30 * 60
    assert deployment_budget(["Microsoft.Network/virtualNetworks"], 5.0) == (5.0, "HPCLZ_DEPLOY_TIMEOUT")


def test_cancelling_a_wait_raises_instead_of_sleeping_on() -> None:
    cancel = threading.Event()
    heard: list[str] = []
    policy = BoundedRetryPolicy(cancel=cancel, on_wait=heard.append, cap=3600)
    threading.Timer(0.1, cancel.set).start()
    with pytest.raises(WaitCancelled):
        policy._wait(3600, "ARM answered 429")
    assert heard == ["ARM answered 429: retrying in 3600 s"]
