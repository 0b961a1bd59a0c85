"""The wheel carries what an installed hpclz needs: templates, presets and the checkov allowlist."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # builds the wheel with pip


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        check=True,
        capture_output=True,
    )
    [wheel] = out.glob("hpclz-*.whl")
    target = out / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    return target


def test_wheel_ships_templates_presets_and_allowlist(unpacked_wheel: Path) -> None:
    data = unpacked_wheel / "hpclz" / "_data"
    assert {p.name for p in (data / "configs").glob("*.yaml")} == {p.name for p in (REPO / "configs").glob("*.yaml")}
    shipped = {p.relative_to(data / "templates") for p in (data / "templates").rglob("*") if p.is_file()}
    in_repo = {p.relative_to(REPO / "templates") for p in (REPO / "templates").rglob("*") if p.is_file()}
    assert shipped == in_repo
    assert (data / "checkov-allowlist.yaml").is_file()


def test_installed_wheel_renders_a_preset_from_its_own_data(unpacked_wheel: Path, tmp_path: Path) -> None:
    """Run from outside the checkout with only the wheel on the path: init and render must find their data."""
    code = (
        "import sys; from hpclz import package_data; from hpclz.cli import main;"
        "print(package_data.templates_dir());"
        "sys.exit(main(['init', '--preset', 'energy', '--out', 'zone.yaml']) or"
        " main(['render', 'zone.yaml', '--out', 'out', '--no-gates']))"
    )
    env = {**os.environ, "PYTHONPATH": str(unpacked_wheel)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout
    assert done.stdout.splitlines()[0] == str(unpacked_wheel / "hpclz" / "_data" / "templates")
    assert (tmp_path / "out" / "manifest.json").is_file()
