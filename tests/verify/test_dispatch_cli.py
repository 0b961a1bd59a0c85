"""`hpclz verify` on the command line where no Slurm is involved: errors, and --local."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, CliResult

CONFIG = REPO / "configs" / "ai-training.yaml"
FIXTURES = REPO / "tests" / "verify" / "fixtures"


def test_a_missing_slurm_conf_is_one_line_and_a_usage_error(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = run_cli("verify", str(CONFIG), "--slurm-conf", str(tmp_path / "slurm.conf"))
    assert result.exit_code == 64
    assert (
        result.stderr == f"error: slurm.conf not found: {tmp_path / 'slurm.conf'} (from --slurm-conf or SLURM_CONF)\n"
    )


def test_no_slurm_client_on_path_says_so(
    run_cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.delenv("HPCLZ_SLURM_BIN", raising=False)
    result = run_cli("verify", str(CONFIG), "-o", "json")
    envelope = json.loads(result.stdout)
    assert result.exit_code == 1 and envelope["exit_code"] == 1
    assert envelope["errors"][0]["message"].startswith("Slurm's sinfo is not on PATH")


def test_a_broken_config_fails_before_any_slurm_call(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nmetadata: {name: x}\n")
    result = run_cli("verify", str(bad), "--slurm-conf", str(tmp_path / "absent.conf"))
    assert result.exit_code == 3
    assert str(bad) in result.stderr


@pytest.mark.parametrize(("readings", "code"), [("h200-good", 0), ("h200-faults/xid79", 6)])
def test_local_runs_the_node_checks_here_without_slurm(
    run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, readings: str, code: int
) -> None:
    monkeypatch.setenv("HPCLZ_VERIFY_FIXTURES", str(FIXTURES / readings))
    monkeypatch.setenv("PATH", "/nonexistent")  # proves --local needs no Slurm client
    envelope = json.loads(run_cli("verify", str(CONFIG), "--local", "-o", "json").stdout)
    assert envelope["exit_code"] == code
    assert envelope["result"]["work_dir"] is None
    [node] = envelope["result"]["nodes"]
    assert len(node["checks"]) >= 14
    reasons = [r for node_reasons in envelope["result"]["bad_nodes"].values() for r in node_reasons]
    assert [r.split()[0] for r in reasons] == (["HPCLZ-VFY-006"] if code else [])


def test_local_cannot_drain(run_cli: Callable[..., CliResult]) -> None:
    result = run_cli("verify", str(CONFIG), "--local", "--drain")
    assert result.exit_code == 64
    assert result.stderr == "error: --drain needs Slurm; it cannot be combined with --local\n"
