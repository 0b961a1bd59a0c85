"""Deploy reports every missing prerequisite in one run (each secret's environment variable, the subscription),
before it renders anything to Azure or writes state."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hpclz.errors import ExitCode
from tests.conftest import REPO, CliResult


def _zone(tmp_path: Path) -> Path:
    text = (REPO / "configs" / "energy.yaml").read_text(encoding="utf-8")
    secrets = "    secrets:\n"
    assert secrets in text
    path = tmp_path / "lz.yaml"
    path.write_text(text.replace(secrets, f"{secrets}      licence-key: ${{env:LICENCE_KEY}}\n", 1), encoding="utf-8")
    return path


def test_every_missing_prerequisite_in_one_error(
    run_cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("SLURMDB_PASSWORD", "LICENCE_KEY", "AZURE_SUBSCRIPTION_ID"):
        monkeypatch.delenv(name, raising=False)
    path = _zone(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    result = run_cli("deploy", str(path), "--yes")
    assert result.exit_code != 0
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1 and "Traceback" not in error
    assert "deploy needs 3 things that are missing" in error
    assert "environment variable SLURMDB_PASSWORD is not set" in error
    assert "environment variable LICENCE_KEY is not set" in error
    assert "no Azure subscription" in error
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written


def test_one_missing_prerequisite_keeps_its_own_line(
    run_cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    monkeypatch.setenv("LICENCE_KEY", "licence-Value-1")
    result = run_cli("deploy", str(_zone(tmp_path)), "--yes")
    assert result.exit_code == ExitCode.USAGE and "error: no Azure subscription" in result.stderr
