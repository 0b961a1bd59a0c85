"""Deploy puts its own hpclz wheel in CycleCloud's locker (Azurite here, through the real
storage SDK) before the compute deployment, and passes "<sha256>/<file name>" to it; the CycleCloud VM carries it
as its hpclz-wheel tag for hpclz-cluster-sync. A new wheel submits the compute deployment again."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from hpclz.azure.locker import CONNECTION_STRING_ENV
from hpclz.deploy.wheel import hpclz_wheel
from tests.conftest import RunCli
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.world import DeploymentRun


def _compute_run(arm: ArmStandIn) -> DeploymentRun:
    runs = [r for r in arm.world.deployments.values() if "compute" in r.name]
    return runs[-1]


def _locker_blob(name: str) -> bytes:
    import os

    service = BlobServiceClient.from_connection_string(os.environ[CONNECTION_STRING_ENV])
    return bytes(service.get_blob_client("hpclz", name).download_blob().readall())


def test_deploy_uploads_the_wheel_and_tags_the_cyclecloud_vm_with_its_digest(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr
    wheel = hpclz_wheel()
    assert wheel.blob == f"{hashlib.sha256(wheel.path.read_bytes()).hexdigest()}/hpclz-0.1.0-py3-none-any.whl"
    assert _locker_blob(wheel.blob) == wheel.path.read_bytes()
    assert _compute_run(arm).body["properties"]["parameters"]["hpclzWheel"] == {"value": wheel.blob}
    vms = [r for r in arm.world.resources.values() if r["type"] == "Microsoft.Compute/virtualMachines"]
    # The CycleCloud server carries the tag; the portal VM beside it (where the preset has one) does not.
    (server,) = [vm for vm in vms if "hpclz-wheel" in vm.get("tags", {})]
    assert server["tags"]["hpclz-wheel"] == wheel.blob
    assert "-cc-" in server["name"]


def test_a_new_wheel_submits_the_compute_deployment_again(
    arm: ArmStandIn,
    zone: Path,
    run_cli: RunCli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    predeployed: Callable[[Path], None],
) -> None:
    predeployed(zone)
    first = _compute_run(arm).body["properties"]["parameters"]["hpclzWheel"]["value"]
    newer = tmp_path / "newer" / hpclz_wheel().name
    newer.parent.mkdir()
    shutil.copy(hpclz_wheel().path, newer)
    with zipfile.ZipFile(newer, "a") as archive:
        archive.writestr("hpclz/_patch.txt", "a later build")
    monkeypatch.setenv("HPCLZ_WHEEL", str(newer))
    again = run_cli("deploy", str(zone), "--yes")
    assert again.exit_code == 0, again.stderr
    second = _compute_run(arm).body["properties"]["parameters"]["hpclzWheel"]["value"]
    assert second != first and second.startswith(hashlib.sha256(newer.read_bytes()).hexdigest() + "/")
    assert _locker_blob(second) == newer.read_bytes()


def test_a_file_that_is_not_an_hpclz_wheel_stops_deploy_before_any_write(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "tool-1.0-py3-none-any.whl"
    other.write_bytes(b"PK")
    monkeypatch.setenv("HPCLZ_WHEEL", str(other))
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code != 0
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: HPCLZ_WHEEL={other}: not an hpclz wheel file")
    assert arm.writes() == []
