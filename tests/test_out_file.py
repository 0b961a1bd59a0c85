"""`--out` never overwrites an input file, and overwrites another existing file only with --force."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli


@pytest.fixture
def zone(tmp_path: Path) -> Path:
    config = tmp_path / "lz.yaml"
    shutil.copy(REPO / "configs" / "energy.yaml", config)
    return config


def _commands(zone: Path, out: Path) -> dict[str, list[str]]:
    return {
        "plan": ["plan", str(zone), "--out", str(out)],
        "schema": ["schema", "--out", str(out)],
        "init": ["init", "--preset", "energy", "--out", str(out)],
    }


def test_plan_never_overwrites_its_config_even_with_force(run_cli: RunCli, zone: Path) -> None:
    before = zone.read_bytes()
    for extra in ([], ["--force"]):
        result = run_cli("plan", str(zone), "--out", str(zone), *extra)
        assert result.exit_code == 64
        assert (
            result.stderr.strip()
            == f"error: {zone}: --out names an input file of this command; refusing to overwrite it"
        )
    alias = zone.parent / "alias.yaml"
    alias.symlink_to(zone)
    assert run_cli("plan", str(zone), "--out", str(alias), "--force").exit_code == 64
    assert zone.read_bytes() == before


@pytest.mark.parametrize("command", ["plan", "schema", "init"])
def test_existing_file_needs_force(run_cli: RunCli, zone: Path, command: str) -> None:
    out = zone.parent / "existing.out"
    out.write_text("keep me\n")
    args = _commands(zone, out)[command]
    refused = run_cli(*args)
    assert refused.exit_code == 64
    assert refused.stderr.strip() == f"error: {out} already exists; pass --force to overwrite it"
    assert out.read_text() == "keep me\n"
    forced = run_cli(*args, "--force")
    assert forced.exit_code in (0, 2), forced.stderr
    assert out.read_text() != "keep me\n"


@pytest.mark.parametrize("command", ["plan", "schema", "init"])
def test_folder_or_missing_parent_is_a_usage_error(run_cli: RunCli, zone: Path, command: str) -> None:
    folder = zone.parent / "a-folder"
    folder.mkdir()
    for out, fragment in ((folder, "--out is a folder"), (zone.parent / "no" / "such" / "x.json", "does not exist")):
        if command == "init" and fragment == "does not exist":
            continue  # init creates the folder for a new config (main: services/init.py)
        result = run_cli(*_commands(zone, out)[command], "--force")
        assert result.exit_code == 64
        assert fragment in result.stderr
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def test_unwritable_folder_is_a_usage_error(run_cli: RunCli, zone: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into any folder whatever its mode")
    locked = zone.parent / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = run_cli("plan", str(zone), "--out", str(locked / "plan.json"))
    finally:
        locked.chmod(0o700)
    assert result.exit_code == 64
    assert "permission denied" in result.stderr


def test_render_onto_a_file_is_a_usage_error(run_cli: RunCli, zone: Path) -> None:
    result = run_cli("render", str(zone), "--out", str(zone), "--no-gates")
    assert result.exit_code == 64
    assert "exists and is not a folder" in result.stderr
