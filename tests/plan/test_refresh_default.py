"""Refresh is plan's default (terraform's: https://developer.hashicorp.com/terraform/cli/commands/plan#refresh-false):
what needs Azure and what does not. The ARM endpoint here is a closed local port, so any call hpclz made would
fail: a plan that exits 0 made none."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from hpclz.cli import terraform_booleans
from tests.conftest import REPO, CliResult
from tests.plan.test_cli import apply

Run = Callable[..., CliResult]
SUBSCRIPTION = "00000000-0000-0000-0000-00000000c0de"


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """energy.yaml in a folder of its own, on a machine where Azure cannot be reached and nobody signed in."""
    for name in ("AZURE_SUBSCRIPTION_ID", "AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HPCLZ_ARM_ENDPOINT", "https://127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.setenv("HPCLZ_AZURE_TOKEN", "not-a-real-token")
    monkeypatch.setenv("HPCLZ_RETRY_TOTAL", "0")
    path = tmp_path / "energy.yaml"
    shutil.copy(REPO / "configs" / "energy.yaml", path)
    return path


def test_a_fresh_clone_plans_offline(run_cli: Run, offline: Path) -> None:
    """The README's first command: no state, so nothing is read back and no credentials are needed."""
    result = run_cli("plan", str(offline))
    assert result.exit_code == 0, result.stderr
    assert "everything is new" in result.stdout


def test_recorded_resources_without_a_subscription_fail_in_one_line_naming_the_flag(
    run_cli: Run, offline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HPCLZ_ARM_ENDPOINT")
    monkeypatch.delenv("HPCLZ_AZURE_TOKEN")
    apply(offline)
    result = run_cli("plan", str(offline))
    assert result.exit_code == 64, result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: refresh: no Azure subscription")
    assert "--refresh=false" in line


def test_recorded_resources_with_azure_unreachable_fail_in_one_line_naming_the_flag(
    run_cli: Run, offline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", SUBSCRIPTION)
    apply(offline)
    result = run_cli("plan", str(offline))
    assert result.exit_code == 5, result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert "reading the" in line and "resources recorded in state back from Azure" in line
    assert "cannot reach Azure Resource Manager" in line and line.endswith("without Azure")
    assert "--refresh=false" in line

    trusting = run_cli("plan", str(offline), "--refresh=false", "--detailed-exitcode")
    assert trusting.exit_code == 0, trusting.stderr
    assert "Azure was not read" in trusting.stdout and "No changes." in trusting.stdout


def test_no_sign_in_fails_in_one_line_that_says_to_sign_in_or_pass_the_flag(
    run_cli: Run, offline: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The public cloud with nobody signed in: DefaultAzureCredential's chain finds no token (HOME and the
    Azure CLI's folder are empty, so no cached sign-in is found)."""
    for name in ("HPCLZ_ARM_ENDPOINT", "HPCLZ_AZURE_TOKEN"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AZURE_CONFIG_DIR", str(tmp_path / ".azure"))
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", SUBSCRIPTION)
    apply(offline)
    result = run_cli("plan", str(offline))
    assert result.exit_code == 5, result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert "Azure sign-in failed" in line and "az login" in line and "--refresh=false" in line


def test_terraform_spelling_of_the_flag() -> None:
    assert terraform_booleans(["plan", "c.yaml", "--refresh=false"]) == ["plan", "c.yaml", "--no-refresh"]
    assert terraform_booleans(["plan", "--refresh=TRUE", "c.yaml"]) == ["plan", "--refresh", "c.yaml"]
    assert terraform_booleans(["plan", "c.yaml", "--refresh-only"]) == ["plan", "c.yaml", "--refresh-only"]
    assert terraform_booleans(["plan", "--", "--refresh=false"]) == ["plan", "--", "--refresh=false"]


def test_a_refresh_value_that_is_not_a_boolean_is_a_usage_error(run_cli: Run, offline: Path) -> None:
    result = run_cli("plan", str(offline), "--refresh=maybe")
    assert result.exit_code == 64
    assert "--refresh=maybe: --refresh takes true or false" in result.stderr
