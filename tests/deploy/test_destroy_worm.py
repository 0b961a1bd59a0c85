"""Destroy and immutable (WORM) checkpoint containers: kept by default, and a refused delete says why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpclz.deploy.destroy import is_immutable, worm_note
from hpclz.state.model import ResourceRecord
from tests.conftest import RunCli
from tests.deploy.conftest import state_of
from tests.support.arm_standin import ArmStandIn, Fault

CONTAINERS = "Microsoft.Storage/storageAccounts/blobServices/containers"


def _container(name: str, body: dict[str, Any]) -> ResourceRecord:
    rid = f"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/st/blobServices/default/containers/{name}"
    return ResourceRecord(
        id=rid, type=CONTAINERS, name=f"st/default/{name}", api_version="2023-05-01", deployment="d", properties=body
    )


def test_immutability_is_read_from_whole_bodies_and_from_older_properties_only_records() -> None:
    worm = {"immutableStorageWithVersioning": {"enabled": True}}
    assert is_immutable(_container("a", {"properties": worm}))
    assert is_immutable(_container("b", worm))
    assert not is_immutable(_container("c", {"properties": {"publicAccess": "None"}}))
    assert worm_note([_container("c", {})]) == ""
    assert "immutable container a" in worm_note([_container("a", {"properties": worm}), _container("c", {})])


def test_plain_destroy_keeps_the_immutable_container(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    result = run_cli("destroy", str(zone), "--yes", "-o", "json")
    assert result.exit_code == 0, result.stdout
    kept = {r["name"]: ResourceRecord.model_validate(r) for r in state_of(zone)["resources"]}
    # The body recorded from the (stand-in) ARM answer carries the property destroy reads.
    assert kept["checkpoints"].type == CONTAINERS and is_immutable(kept["checkpoints"])
    assert not is_immutable(kept["datasets"])


def test_a_refused_delete_of_the_checkpoint_group_names_the_retention(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    # What Azure does while a sealed version's retention runs: the group's deletion fails (the stand-in has no WORM).
    arm.faults.add(
        Fault(
            "error",
            method="DELETE",
            path=r"/resourcegroups/rg-aitrain-storage-prod-eus2$",
            status=409,
            times=None,
            code="Conflict",
            message="blobs under an immutability policy",
        )
    )
    result = run_cli("destroy", str(zone), "--yes", "--include-data")
    assert result.exit_code == 5
    assert "rg-aitrain-storage-prod-eus2: Conflict: blobs under an immutability policy" in result.stdout
    assert "holds immutable container checkpoints" in result.stdout
    assert "retention expires" in result.stdout
    assert any(r["name"] == "rg-aitrain-storage-prod-eus2" for r in state_of(zone)["resources"])
