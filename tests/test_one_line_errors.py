"""Failures outside hpclz's own checks still end in one line and a non-zero exit: output that cannot be written
(/dev/full, a closed standard output), a terminal encoding without the characters hpclz prints, an --out name the
file system refuses, a secret that is not UTF-8."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hpclz.config.loader import load_config
from hpclz.deploy.secrets import resolve_secrets
from hpclz.errors import ExitCode, HpclzError
from tests.conftest import REPO

HPCLZ = str(Path(sys.executable).parent / "hpclz")
ENERGY = str(REPO / "configs" / "energy.yaml")


def _run(*args: str, env: dict[str, str] | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [HPCLZ, *args], env={**os.environ, **(env or {})}, capture_output=kw.pop("stdout", None) is None, text=True,
        timeout=120, **kw,
    )  # fmt: skip


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("output", ["text", "json"])
def test_a_full_disk_on_standard_output_is_one_line(output: str) -> None:
    with Path("/dev/full").open("w") as full:
        result = subprocess.run(
            [HPCLZ, "validate", ENERGY, "-o", output], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert result.returncode == ExitCode.FAILED
    assert result.stderr.strip() == "error: No space left on device", result.stderr


def test_a_closed_standard_output_is_not_success() -> None:
    result = subprocess.run(
        ["sh", "-c", f'"{HPCLZ}" validate "{ENERGY}" >&-'], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == ExitCode.FAILED
    assert "standard output is closed" in result.stderr and "Traceback" not in result.stderr


def test_an_ascii_terminal_gets_escapes_not_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "lz.yaml"
    shutil.copy(ENERGY, config)
    result = _run("plan", str(config), "--refresh=false", env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == ExitCode.CHANGES_PRESENT or result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stdout.isascii()


def test_an_out_name_too_long_for_the_file_system_is_one_line(tmp_path: Path) -> None:
    result = _run("schema", "--out", str(tmp_path / ("x" * 300)))
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "File name too long" in result.stderr


def test_a_secret_that_is_not_utf8_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from hpclz.render.build import build_plan

    loaded = load_config(ENERGY)
    monkeypatch.setenv("SLURMDB_PASSWORD", os.fsdecode(b"caf\xe9-not-utf8"))
    with pytest.raises(HpclzError, match="environment variable SLURMDB_PASSWORD is not valid UTF-8"):
        resolve_secrets(loaded, build_plan(loaded.config))
