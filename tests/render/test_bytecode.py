"""The compiled-template cache (hpclz.render.bytecode): a warm cache compiles nothing and renders the golden
files byte for byte; a damaged, unusable or shared folder is a miss, never an error; concurrent runs leave it
whole."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest

from hpclz.render import bytecode
from hpclz.render.engine import environment
from tests.render.golden import committed, rendered

ENERGY = Path(__file__).resolve().parents[2] / "configs" / "energy.yaml"


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Names of the templates Jinja compiles from source (jinja2.Environment.compile, spied on, still called)."""
    names: list[str] = []
    original: Any = jinja2.Environment.compile

    def spy(self: jinja2.Environment, source: str, name: str | None = None, *args: Any, **kwargs: Any) -> Any:
        names.append(str(name))
        return original(self, source, name, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", spy)
    yield names


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A new, empty cache folder, and a new environment on every call of environment() after a clear."""
    monkeypatch.setenv(bytecode.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(bytecode.CACHE_SWITCH_ENV, raising=False)
    environment.cache_clear()
    yield tmp_path / "cache"
    environment.cache_clear()


def _entries(home: Path) -> list[Path]:
    return sorted(home.glob("jinja/*/*.code"))


def test_a_warm_cache_compiles_nothing_and_renders_the_golden_files(cache_home: Path, compiles: list[str]) -> None:
    cold = rendered(ENERGY)
    assert compiles, "the first run compiles"
    assert len(_entries(cache_home)) == len(set(compiles))
    compiles.clear()
    environment.cache_clear()  # a new environment reads the folder, as a new process does
    warm = rendered(ENERGY)
    assert compiles == []
    assert warm == cold == committed(ENERGY)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "other-python"])
def test_a_damaged_entry_is_compiled_again(cache_home: Path, compiles: list[str], damage: str) -> None:
    rendered(ENERGY)
    for entry in _entries(cache_home):
        data = entry.read_bytes()
        damaged = {
            "garbage": os.urandom(len(data)),
            "truncated": data[: len(data) // 2],
            "empty": b"",
            # a whole, well-formed entry whose code marshal cannot read (its type byte is not one marshal knows)
            "other-python": data[:40] + hashlib.sha256(b"\xff").hexdigest().encode() + b"\xff",
        }[damage]
        entry.write_bytes(damaged)
    compiles.clear()
    environment.cache_clear()
    assert rendered(ENERGY) == committed(ENERGY)
    assert len(set(compiles)) == len(_entries(cache_home)), "every damaged entry was compiled again"
    compiles.clear()
    environment.cache_clear()
    rendered(ENERGY)
    assert compiles == [], "and written back whole"


def test_an_edited_template_is_not_served_from_the_cache(cache_home: Path, tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "t.txt").write_text("one\n")
    assert environment(templates).get_template("t.txt").render() == "one\n"
    (templates / "t.txt").write_text("two\n")
    environment.cache_clear()
    assert environment(templates).get_template("t.txt").render() == "two\n"


def test_a_cache_folder_that_cannot_be_made_is_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(bytecode.CACHE_DIR_ENV, str(blocker))
    assert bytecode.template_code_cache() is None
    environment.cache_clear()
    try:
        assert rendered(ENERGY) == committed(ENERGY)
    finally:
        environment.cache_clear()


def test_a_folder_others_may_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the folder holds is run as code, so a folder another user could write to is never read."""
    monkeypatch.setenv(bytecode.CACHE_DIR_ENV, str(tmp_path))
    folder = bytecode.cache_root() / bytecode.fingerprint()
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    assert bytecode.template_code_cache() is None
    folder.chmod(0o700)
    assert bytecode.template_code_cache() is not None


def test_an_unwritable_folder_is_a_miss_not_an_error(cache_home: Path) -> None:
    cache = environment().bytecode_cache
    assert isinstance(cache, bytecode.TemplateCodeCache)
    cache.folder.rmdir()  # gone after the environment checked it: every read and write fails
    assert rendered(ENERGY) == committed(ENERGY)
    assert not cache.folder.exists()


def test_the_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bytecode.CACHE_SWITCH_ENV, "0")
    assert bytecode.template_code_cache() is None


def test_another_hpclz_version_uses_another_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    before = bytecode.fingerprint()
    monkeypatch.setattr(bytecode, "__version__", "0.0.0-other")
    assert bytecode.fingerprint() != before


RENDER = (
    "import hashlib, json, sys; from hpclz.config import load_config; from hpclz.render.build import build_plan; "
    "from hpclz.render.writer import output_files; "
    "files = output_files(build_plan(load_config(sys.argv[1]).config)); "
    "print(hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest())"
)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_concurrent_runs_leave_a_whole_cache(tmp_path: Path) -> None:
    """Three processes fill the same empty folder at once; each renders the same bytes, and a fourth run then
    finds every template whole in the cache."""
    env = {**os.environ, bytecode.CACHE_DIR_ENV: str(tmp_path)}
    env.pop(bytecode.CACHE_SWITCH_ENV, None)
    runs = [
        subprocess.Popen([sys.executable, "-c", RENDER, str(ENERGY)], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    digests = {run.communicate(timeout=240)[0].strip() for run in runs}
    assert all(run.returncode == 0 for run in runs)
    expected = json.dumps(committed(ENERGY), sort_keys=True).encode()
    assert digests == {hashlib.sha256(expected).hexdigest()}
    entries = sorted(tmp_path.glob("jinja/*/*"))
    assert entries and all(e.suffix == ".code" for e in entries), "no temporary file left behind"
    check = (
        "import sys; from hpclz.render import bytecode; from jinja2.bccache import Bucket; "
        "cache = bytecode.template_code_cache(); loaded = []\n"
        "for entry in cache.folder.glob('*.code'):\n"
        "    bucket = Bucket(None, entry.stem, entry.read_bytes()[:40].decode()); cache.load_bytecode(bucket)\n"
        "    loaded.append(bucket.code is not None)\n"
        "print(len(loaded), all(loaded))"
    )
    out = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(len(entries)), "True"]
