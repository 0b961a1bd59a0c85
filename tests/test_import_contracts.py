"""The layer, cycle and SDK-boundary contracts in pyproject.toml hold, and would catch a break.

scripts/test runs `lint-imports` too; these tests show each contract can fail, on a copy of the package
with one bad import added, so a contract that silently matches nothing would not pass unnoticed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(root: Path, package_parent: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(package_parent), "PATH": str(LINT_IMPORTS.parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "src" / "hpclz", tmp_path / "hpclz", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _add_line(module: Path, line: str) -> None:
    module.write_text(module.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_repository_keeps_every_contract() -> None:
    done = _lint(REPO, REPO / "src")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout


def test_an_upward_import_breaks_the_layers(copy: Path) -> None:
    _add_line(copy / "hpclz" / "config" / "base.py", "import hpclz.services.validate  # noqa: E402")
    done = _lint(copy, copy)
    assert done.returncode != 0
    assert "hpclz.config.base -> hpclz.services.validate" in done.stdout


def test_a_service_importing_another_breaks_their_independence(copy: Path) -> None:
    _add_line(copy / "hpclz" / "services" / "plan.py", "import hpclz.services.deploy  # noqa: E402")
    done = _lint(copy, copy)
    assert done.returncode != 0
    assert "Services do not import each other, except hpclz.services.validate BROKEN" in done.stdout
    assert "hpclz.services.plan -> hpclz.services.deploy" in done.stdout


def test_a_service_may_import_validation(copy: Path) -> None:
    _add_line(copy / "hpclz" / "services" / "nodes.py", "import hpclz.services.validate  # noqa: E402")
    done = _lint(copy, copy)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_cycle_inside_a_package_is_refused(copy: Path) -> None:
    # state.local already imports state.model; the reverse import closes a cycle within one layer.
    _add_line(copy / "hpclz" / "state" / "model.py", "import hpclz.state.local  # noqa: E402")
    done = _lint(copy, copy)
    assert done.returncode != 0
    assert "No import cycle between the modules or subpackages of any package BROKEN" in done.stdout


def test_the_sdk_outside_the_adapter_is_refused(copy: Path) -> None:
    _add_line(copy / "hpclz" / "deploy" / "runner.py", "import azure.core.exceptions  # noqa: E402")
    done = _lint(copy, copy)
    assert done.returncode != 0
    assert "hpclz.deploy is not allowed to import azure" in done.stdout
