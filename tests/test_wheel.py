"""The wheel carries what an installed hpclz needs, and an install of it renders a preset with its gates."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest

from hpclz.arm.checkov_gate import CHECKOV_ENV, find_checkov
from tests.conftest import REPO, require
from tests.support.hpclz_wheel import build_wheel

pytestmark = pytest.mark.slow  # builds the wheel with pip


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def unpacked_wheel(built_wheel: Path) -> Path:
    target = built_wheel.parent / "site"
    with zipfile.ZipFile(built_wheel) as archive:
        archive.extractall(target)
    return target


@pytest.fixture(scope="module")
def installed(built_wheel: Path) -> Path:
    """A fresh virtual environment with the wheel installed by pip, offline. Its dependencies are not downloaded
    again: a .pth line appends this environment's site-packages after the new one's, so hpclz itself can only
    come from the wheel (a .pth-added folder's own .pth files, such as the editable install's, are not read)."""
    env = built_wheel.parent / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            str(built_wheel),
        ],
        check=True,
        capture_output=True,
    )
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    (site / "zz-hpclz-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env


def test_wheel_ships_templates_presets_allowlist_and_schemas(unpacked_wheel: Path) -> None:
    data = unpacked_wheel / "hpclz" / "_data"
    assert {p.name for p in (data / "configs").glob("*.yaml")} == {p.name for p in (REPO / "configs").glob("*.yaml")}
    shipped = {p.relative_to(data / "templates") for p in (data / "templates").rglob("*") if p.is_file()}
    in_repo = {p.relative_to(REPO / "templates") for p in (REPO / "templates").rglob("*") if p.is_file()}
    assert shipped == in_repo
    assert (data / "checkov-allowlist.yaml").is_file()
    schemas = unpacked_wheel / "hpclz" / "armschemas"
    packaged = REPO / "src" / "hpclz" / "armschemas"
    assert {p.relative_to(schemas) for p in schemas.rglob("*.json")} == {
        p.relative_to(packaged) for p in packaged.rglob("*.json")
    }
    assert (schemas / "README.md").is_file()
    # hpclz-install-wheel reads the lock of the dependencies it installs out of the wheel, by this member name.
    lock = unpacked_wheel / "hpclz" / "requirements-lock.txt"
    assert lock.read_bytes() == (REPO / "src" / "hpclz" / "requirements-lock.txt").read_bytes()
    assert "hpclz/requirements-lock.txt" in (REPO / "templates" / "cloud-init" / "install_wheel.sh.j2").read_text()


def test_the_cyclecloud_servers_programs_are_where_its_loader_takes_them(built_wheel: Path) -> None:
    """hpclz-server-programs reads hpclz-cluster-sync and hpclz-cc-users out of this wheel by member name."""
    loader = ast.parse((REPO / "templates" / "cloud-init" / "server_programs.py").read_text(encoding="utf-8"))
    constants = {
        target.id: ast.literal_eval(node.value)
        for node in loader.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id in ("MEMBER", "PROGRAMS")
    }
    with zipfile.ZipFile(built_wheel) as archive:
        for source, _installed in constants["PROGRAMS"]:
            shipped = archive.read(constants["MEMBER"] + source)
            assert shipped == (REPO / "templates" / "cloud-init" / source).read_bytes()


def _render(env: Path, cwd: Path, extra_env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`hpclz init` then a gated `hpclz render`, run from outside the checkout by the installed console script."""
    hpclz = str(env / "bin" / "hpclz")
    clean = {k: v for k, v in os.environ.items() if k not in (CHECKOV_ENV, "PYTHONPATH", "VIRTUAL_ENV")}
    full = {**clean, **extra_env}
    subprocess.run(
        [hpclz, "init", "--preset", "energy", "--out", "zone.yaml"], cwd=cwd, env=full, check=True, capture_output=True
    )
    done = subprocess.run(
        [hpclz, "render", "zone.yaml", "--out", "out", "-o", "json"], cwd=cwd, env=full, capture_output=True, text=True
    )
    return done, json.loads(done.stdout or "{}")


def test_installed_wheel_runs_schema_and_lint_gates_and_reports_checkov_not_run(
    installed: Path, tmp_path: Path
) -> None:
    code = (
        "from hpclz import package_data, arm; print(arm.__file__); print(package_data.templates_dir()); "
        "print(package_data.docs_dir() / 'patching.md')"
    )
    where = subprocess.check_output([str(installed / "bin" / "python"), "-c", code], text=True, cwd=tmp_path)
    assert all(line.startswith(str(installed)) for line in where.splitlines()), where  # the wheel, not the checkout
    assert Path(where.splitlines()[-1]).is_file()
    page = subprocess.run(
        [str(installed / "bin" / "hpclz"), "explain", "docs/exit-codes.md"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert page.returncode == 0 and page.stdout.startswith(f"docs/exit-codes.md ({installed}")
    done, envelope = _render(installed, tmp_path, {"PATH": f"{installed / 'bin'}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr + done.stdout
    result = envelope["result"]
    assert result["gates"] == ["schema", "lint"]
    assert "pipx install checkov" in result["gates_not_run"]["checkov"]
    assert envelope["ok"] is True and (tmp_path / "out" / "manifest.json").is_file()


@pytest.mark.checkov
def test_installed_wheel_runs_checkov_when_it_is_installed(installed: Path, tmp_path: Path) -> None:
    checkov = find_checkov()
    require(checkov is not None, "checkov")
    assert checkov is not None
    done, envelope = _render(installed, tmp_path, {CHECKOV_ENV: checkov})
    assert done.returncode == 0, done.stderr + done.stdout
    assert envelope["result"]["gates"] == ["schema", "lint", "checkov"]


def _repack(env: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed hpclz finds its own wheel, with no HPCLZ_WHEEL and no checkout: a fresh process each time."""
    code = "from hpclz.deploy.wheel import hpclz_wheel; w = hpclz_wheel(); print(w.path); print(w.sha256)"
    clean = {k: v for k, v in os.environ.items() if k not in ("HPCLZ_WHEEL", "PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(env / "bin" / "python"), "-c", code], cwd=cwd, env=clean, capture_output=True, text=True)


def _members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist() if not name.endswith(".dist-info/RECORD")}


def test_an_installed_hpclz_rebuilds_the_wheel_it_was_installed_from(
    installed: Path, built_wheel: Path, tmp_path: Path
) -> None:
    first, second = _repack(installed, tmp_path), _repack(installed, tmp_path)
    assert first.returncode == 0, first.stderr
    path, sha256 = first.stdout.split()
    repacked = Path(path)
    assert repacked.name == built_wheel.name and not repacked.is_relative_to(REPO)
    assert _members(repacked) == _members(built_wheel)  # the same files with the same bytes; only RECORD is new
    with zipfile.ZipFile(repacked) as archive:
        assert archive.testzip() is None
        record = archive.read("hpclz-0.1.0.dist-info/RECORD").decode().splitlines()
    assert len(record) == len(_members(built_wheel)) + 1
    assert second.returncode == 0 and second.stdout.split()[1] == sha256  # the same install, the same digest


def test_an_installed_hpclz_that_was_changed_is_not_repacked(installed: Path, tmp_path: Path) -> None:
    site = Path(
        subprocess.check_output(
            [str(installed / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True,
        ).strip()
    )
    changed = site / "hpclz" / "deploy" / "prune.py"
    original = changed.read_bytes()
    try:
        changed.write_bytes(original + b"# a local edit\n")
        done = _repack(installed, tmp_path)
    finally:
        changed.write_bytes(original)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"hpclz.errors.HpclzError: {changed} differs from the installed hpclz's RECORD: a changed install is not "
        "deployed; reinstall hpclz or set HPCLZ_WHEEL"
    )


_DOC = re.compile(r"(?<![\w/.-])docs/[\w./-]+\.(?:md|json)")


def _docs_named_in_messages() -> set[str]:
    """`docs/...` paths in hpclz's string literals (messages, fixes, rule docstrings `explain` prints), not comments."""
    named: set[str] = set()
    for source in (REPO / "src" / "hpclz").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named.update(m.rstrip(".") for m in _DOC.findall(node.value))
    return named


def test_every_doc_a_message_names_ships_in_the_wheel(unpacked_wheel: Path) -> None:
    named = _docs_named_in_messages()
    assert {"docs/patching.md", "docs/exit-codes.md", "docs/rules.md"} <= named  # the scan finds messages
    shipped = unpacked_wheel / "hpclz" / "_data"
    assert sorted(n for n in named if not (shipped / n).is_file()) == []
    in_repo = {p.relative_to(REPO / "docs") for p in (REPO / "docs").rglob("*") if p.is_file()}
    assert {p.relative_to(shipped / "docs") for p in (shipped / "docs").rglob("*") if p.is_file()} == in_repo
