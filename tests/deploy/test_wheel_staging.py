"""The staging scripts of hpclz.deploy.wheel_staging, run by bash here as the VM would run them: pieces are written
only when whole, the join is refused unless it is the wheel hpclz hashed, and the VM's folder goes either way. The
deploy through the stand-in's Run Commands is tests/deploy/test_deploy_reach.py; the managed Run Command limit is
tested against the stand-in through the real compute SDK below."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.core.exceptions import HttpResponseError

from hpclz.azure.clients import AzureClients
from hpclz.deploy.wheel import Wheel
from hpclz.deploy.wheel_staging import (
    PIECE_BYTES,
    SCRIPT_LIMIT,
    UPLOAD,
    Locker,
    piece_script,
    pieces,
    upload_script,
)
from tests.render.test_node_portability import _shellcheck, _vermin
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.run_commands import MAX_RUN_COMMANDS

LOCKER = Locker("stlocker", "hpclz", "/subscriptions/s/resourceGroups/g/providers/x/userAssignedIdentities/id-cc")


@pytest.fixture
def wheel(tmp_path: Path) -> Wheel:
    data = os.urandom(2 * PIECE_BYTES + 1234)  # three pieces, the last a short one
    path = tmp_path / "hpclz-0.0.1-py3-none-any.whl"
    path.write_bytes(data)
    return Wheel(path, hashlib.sha256(data).hexdigest())


def _bash(script: str, folder: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HPCLZ_STAGE_DIR": str(folder), "HPCLZ_LOCKER_ATTEMPTS": "1"}
    env["HPCLZ_IMDS_URL"] = "http://127.0.0.1:9"  # nothing listens: the upload itself is not what these test
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)


def test_every_script_stays_under_the_bound_and_pieces_join_to_the_wheel(wheel: Wheel) -> None:
    parts = pieces(wheel.path.read_bytes())
    assert len(parts) == 3 and b"".join(parts) == wheel.path.read_bytes()
    full = [piece_script(wheel, i, 3, p) for i, p in enumerate(parts)]
    assert max(len(s.encode()) for s in full) <= SCRIPT_LIMIT
    assert len(full[0].encode()) > SCRIPT_LIMIT * 0.9  # the pieces use most of it: few run commands


def test_a_damaged_piece_is_not_written(wheel: Wheel, tmp_path: Path) -> None:
    piece = pieces(wheel.path.read_bytes())[0]
    script = piece_script(wheel, 0, 3, piece)
    head, body = script.split("<<'HPCLZ_PIECE'\n", 1)
    first, rest = body.split("\n", 1)
    done = _bash(f"{head}<<'HPCLZ_PIECE'\n{first[::-1]}\n{rest}", tmp_path)
    assert done.returncode == 1
    assert "piece 1 of 3 refused: its SHA-256 is" in done.stderr
    assert f"expected {hashlib.sha256(piece).hexdigest()}" in done.stderr
    assert list((tmp_path / f"hpclz-wheel-{wheel.sha256}").iterdir()) == []


def test_the_join_is_refused_unless_it_is_the_wheel_and_the_folder_goes(wheel: Wheel, tmp_path: Path) -> None:
    parts = pieces(wheel.path.read_bytes())
    for i, piece in enumerate(parts):
        assert _bash(piece_script(wheel, i, 3, piece), tmp_path).returncode == 0
    folder = tmp_path / f"hpclz-wheel-{wheel.sha256}"
    assert sorted(p.name for p in folder.iterdir()) == ["0", "1", "2"]
    (folder / "1").write_bytes(parts[1][::-1])  # a piece changed on the VM after it was checked
    done = _bash(upload_script(wheel, 3, LOCKER), tmp_path)
    assert done.returncode == 1
    assert f"refused {wheel.name}: its SHA-256 is" in done.stderr and f"expected {wheel.sha256}" in done.stderr
    assert not folder.exists()


def test_a_missing_piece_stops_the_upload(wheel: Wheel, tmp_path: Path) -> None:
    assert _bash(piece_script(wheel, 0, 3, pieces(wheel.path.read_bytes())[0]), tmp_path).returncode == 0
    done = _bash(upload_script(wheel, 3, LOCKER), tmp_path)
    assert done.returncode == 1 and "piece 2 of 3 is missing on this VM" in done.stderr
    assert not (tmp_path / f"hpclz-wheel-{wheel.sha256}").exists()


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin


def test_the_standin_holds_at_most_25_managed_run_commands_per_vm(arm: ArmStandIn) -> None:
    arm.compute.add("rg-cc", "vm-cc", {})
    commands = AzureClients(arm.subscription_id).compute.virtual_machine_run_commands
    body = {"location": "eastus2", "properties": {"source": {"script": "true"}}}
    for i in range(MAX_RUN_COMMANDS):
        commands.begin_create_or_update("rg-cc", "vm-cc", f"rc-{i}", body).result()
    with pytest.raises(HttpResponseError) as refused:
        commands.begin_create_or_update("rg-cc", "vm-cc", "one-more", body).result()
    assert "maximum number of managed Run commands (max=25, current=25)" in str(refused.value)
    commands.begin_create_or_update("rg-cc", "vm-cc", "rc-0", body).result()  # replacing one is not one more
    commands.begin_delete("rg-cc", "vm-cc", "rc-1").result()
    commands.begin_create_or_update("rg-cc", "vm-cc", "one-more", body).result()


def test_the_vm_side_runs_on_the_cyclecloud_images_python_and_passes_shellcheck(wheel: Wheel, tmp_path: Path) -> None:
    """The upload runs with the CycleCloud VM's /usr/bin/python3 (3.6 on AlmaLinux 8: test_node_portability.py);
    the scripts are bash, checked as every rendered node script is."""
    upload = tmp_path / "upload.py"
    upload.write_text(UPLOAD, encoding="utf-8")
    checked = _vermin(upload)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    parts = pieces(wheel.path.read_bytes())
    for i, script in enumerate([piece_script(wheel, 0, 3, parts[0]), upload_script(wheel, 3, LOCKER)]):
        path = tmp_path / f"script-{i}.sh"
        path.write_text(script, encoding="utf-8")
        linted = _shellcheck(path)
        assert linted.returncode == 0, linted.stdout + linted.stderr
