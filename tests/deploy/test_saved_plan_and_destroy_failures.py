"""`deploy --plan FILE` applies a saved plan and refuses a stale one; destroy carries on past a failure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RunCli
from tests.deploy.conftest import destroy_everything, left_after_destroy, our_groups, state_of
from tests.support.arm_standin import ArmStandIn, Fault


def test_saved_plan_is_applied_then_refused_once_stale(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    saved = zone.parent / "plan.json"
    made = run_cli("plan", str(zone), "--out", str(saved))
    assert made.exit_code in (0, 2), made.stderr
    applied = run_cli("deploy", str(zone), "--yes", "--plan", str(saved))
    assert applied.exit_code == 0, applied.stderr + applied.stdout
    assert all(d["status"] == "succeeded" for d in state_of(zone)["deployments"].values())

    stale = run_cli("deploy", str(zone), "--yes", "--plan", str(saved))
    assert stale.exit_code != 0
    assert "stale plan" in stale.stderr and "state changed" in stale.stderr


def test_destroy_reports_each_failure_and_carries_on(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    arm.faults.add(
        Fault(
            "error",
            method="DELETE",
            path=r"/resourcegroups/rg-aitrain-compute-prod-eus2$",
            status=409,
            times=None,
            code="Conflict",
            message="in use",
        )
    )
    arm.faults.add(
        Fault(
            "error",
            method="DELETE",
            path=r"/bastionHosts/bas-aitrain",
            status=400,
            times=None,
            code="InUse",
            message="bastion busy",
        )
    )
    result = run_cli("destroy", str(zone), "--yes")
    assert result.exit_code == 5
    # The compute group is deleted whole on a plain destroy (the monitoring group no longer is: it holds the flow
    # records' storage account, data like every storage account).
    assert "rg-aitrain-compute-prod-eus2: Conflict: in use" in result.stdout
    assert "bas-aitrain-prod-eus2: InUse: bastion busy" in result.stdout
    # The blob endpoint is no longer deleted on a plain destroy: it is the kept account's only way in (private_reach).
    assert "kept Microsoft.Network/privateEndpoints pep-aitrain-blob-prod-eus2" in result.stderr
    assert "rg-aitrain-compute-prod-eus2" in arm.world.groups and "rg-aitrain-network-prod-eus2" in arm.world.groups
    recorded = {r["name"] for r in state_of(zone)["resources"]}
    assert {"rg-aitrain-compute-prod-eus2", "bas-aitrain-prod-eus2", "amlfs-aitrain-prod-eus2"} <= recorded

    arm.faults.clear()
    again = destroy_everything(run_cli, arm, zone)
    assert again.exit_code == 0, again.stdout
    assert left_after_destroy(arm) == [] and our_groups(arm) == {}


def test_destroy_after_a_failed_deploy_removes_what_it_created(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    arm.faults.add(Fault("resource", path="Microsoft.Network/bastionHosts", code="Conflict", message="x"))
    assert run_cli("deploy", str(zone), "--yes").exit_code == 5
    recorded = {r["type"] for r in state_of(zone)["resources"]}
    assert "Microsoft.Network/virtualNetworks" in recorded  # created before the failure, so recorded
    result = run_cli("destroy", str(zone), "--yes", "--include-data")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert left_after_destroy(arm) == [] and our_groups(arm) == {}


@pytest.mark.timeout(120)  # a regression re-reads the pipe and would block forever
def test_saved_plan_is_read_once_so_what_was_preflighted_is_what_is_applied(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    """A named pipe yields its content to exactly one reader: a second read of the plan file (after preflight,
    under the lock) would block on the empty pipe instead of applying the copy that was checked."""
    import os
    import threading

    saved = zone.parent / "plan.json"
    assert run_cli("plan", str(zone), "--out", str(saved)).exit_code in (0, 2)
    content = saved.read_bytes()
    pipe = zone.parent / "plan.fifo"
    os.mkfifo(pipe)

    def feed_once() -> None:
        with Path(pipe).open("wb") as writer:
            writer.write(content)

    feeder = threading.Thread(target=feed_once, daemon=True)
    feeder.start()
    applied = run_cli("deploy", str(zone), "--yes", "--plan", str(pipe))
    feeder.join(timeout=5)
    assert applied.exit_code == 0, applied.stderr + applied.stdout
    assert all(d["status"] == "succeeded" for d in state_of(zone)["deployments"].values())
