"""`hpclz verify --local` on a machine where the checks cannot be measured is its own outcome, never a pass."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from hpclz.errors import ExitCode
from tests.conftest import REPO, CliResult
from tests.verify.helpers import GOOD

pytestmark = pytest.mark.filterwarnings("ignore:Failed to initialize NumPy:UserWarning")
AI = str(REPO / "configs" / "ai-training.yaml")  # two GPU sizes: the SKU cannot be taken from the config


def test_nothing_measurable_is_not_measured_exit_7(
    run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An empty fixtures folder is a machine with no nvidia-smi, no kernel log, no IMDS: nothing can be read.
    monkeypatch.setenv("HPCLZ_VERIFY_FIXTURES", str(tmp_path))
    monkeypatch.delenv("HPCLZ_VERIFY_SKU", raising=False)
    text = run_cli("verify", AI, "--local")
    assert text.exit_code == ExitCode.NOT_MEASURED and text.exit_code == 7
    assert "passed" not in text.stdout
    assert "not measured: 18 of 18 checks could not be measured on this machine" in text.stdout
    envelope = json.loads(run_cli("verify", AI, "--local", "-o", "json").stdout)
    assert envelope["exit_code"] == 7 and envelope["ok"] is False
    assert envelope["result"]["outcome"] == "not_measured"


def test_real_h200_captures_still_pass(run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCLZ_VERIFY_FIXTURES", str(GOOD))  # captured on a Standard_ND96isr_H200_v5 (README)
    result = run_cli("verify", AI, "--local", "-o", "json")
    assert result.exit_code == ExitCode.OK, result.stdout
    assert json.loads(result.stdout)["result"]["outcome"] == "passed"


def test_exit_code_is_documented() -> None:
    assert "| 7 | `NOT_MEASURED` |" in (REPO / "docs" / "exit-codes.md").read_text(encoding="utf-8")
