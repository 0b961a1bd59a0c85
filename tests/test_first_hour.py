"""The first hour of a new user: init, completion, help, sign-in, explain, repeat findings."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hpclz.azure.errors import azure_errors, sign_in_failure
from hpclz.cli import app
from hpclz.config.schema import config_schema
from hpclz.errors import ExitCode, HpclzError
from tests.conftest import REPO, RunCli

AI = str(REPO / "configs" / "ai-training.yaml")

# DefaultAzureCredential's failure, as users captured it: github.com/dask/dask-cloudprovider/issues/340 and
# github.com/Azure/azure-cli/issues/31648 (the SDK raises ClientAuthenticationError with this message).
CHAIN_FAILED = (
    "DefaultAzureCredential failed to retrieve a token from the included credentials.\n"
    "Attempted credentials:\n"
    "\tEnvironmentCredential: EnvironmentCredential authentication unavailable. Environment variables are not "
    "fully configured.\nVisit https://aka.ms/azsdk/python/identity/environmentcredential/troubleshoot to "
    "troubleshoot.this issue.\n"
    "\tManagedIdentityCredential: ManagedIdentityCredential authentication unavailable, no response from the "
    "IMDS endpoint.\n"
    "\tSharedTokenCacheCredential: SharedTokenCacheCredential authentication unavailable. No accounts were found "
    "in the cache.\n"
    "\tAzureCliCredential: Azure CLI not found on path\n"
    "\tAzurePowerShellCredential: PowerShell is not installed\n"
    "To mitigate this issue, please refer to the troubleshooting guidelines here at "
    "https://aka.ms/azsdk/python/identity/defaultazurecredential/troubleshoot."
)


def test_init_config_points_at_a_schema_that_exists_beside_it(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "zone.yaml"
    result = run_cli("init", "--preset", "energy", "--out", str(target))
    assert result.exit_code == 0, result.stderr
    first = target.read_text(encoding="utf-8").splitlines()[0]
    match = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
    assert match, first
    schema = (target.parent / match.group(1)).resolve()
    assert schema.is_file() and json.loads(schema.read_text(encoding="utf-8")) == config_schema()


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    subs = getattr(command, "commands", None) or {}
    return [path] + [p for name, sub in subs.items() for p in _command_paths(sub, (*path, name))]


def test_help_shows_readable_metavars_never_python_types(run_cli: RunCli) -> None:
    import typer

    paths = _command_paths(typer.main.get_command(app))
    assert ("verify",) in paths and ("state", "show") in paths
    for path in paths:
        result = run_cli(*path, "--help")
        assert result.exit_code == 0, path
        assert not re.search(r"<(list\[|int|float|str>|path>|text>)|range>", result.stdout), (path, result.stdout)
    assert "--suppress ID" in run_cli("validate", "--help").stdout
    assert "--budget SECONDS" in run_cli("verify", "--help").stdout


def _hpclz(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "import sys; from hpclz.cli import run; sys.argv[0] = 'hpclz'; run()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=60
    )


def test_show_and_install_completion(tmp_path: Path) -> None:
    shown = _hpclz("--show-completion", "bash", env={"HOME": str(tmp_path)})
    assert shown.returncode == 0, shown.stderr
    assert "_HPCLZ_COMPLETE=complete_bash" in shown.stdout
    installed = _hpclz("--install-completion", "bash", env={"HOME": str(tmp_path)})
    assert installed.returncode == 0, installed.stderr
    script = tmp_path / ".bash_completions" / "hpclz.sh"
    assert script.is_file() and str(script) in (tmp_path / ".bashrc").read_text()
    # What bash asks when the user presses TAB after `hpclz val`.
    words = _hpclz(env={"_HPCLZ_COMPLETE": "complete_bash", "COMP_WORDS": "hpclz val", "COMP_CWORD": "1"})
    assert words.stdout.split() == ["validate"]


def test_sign_in_failure_is_one_line_naming_what_was_tried() -> None:
    from azure.core.exceptions import ClientAuthenticationError

    with pytest.raises(HpclzError) as caught, azure_errors("preflight"):
        raise ClientAuthenticationError(message=CHAIN_FAILED)
    line = str(caught.value)
    assert "\n" not in line and "aka.ms" not in line and caught.value.exit_code == ExitCode.AZURE_ERROR
    assert line.startswith("preflight: Azure sign-in failed (tried environment variables, managed identity, ")
    assert "Azure CLI" in line and "az login" in line and "-vv" in line
    assert sign_in_failure("AuthorizationFailed: no access") is None


def test_azure_sdk_logs_only_with_vv(run_cli: RunCli, capsys: pytest.CaptureFixture[str]) -> None:
    chain = logging.getLogger("azure.identity._credentials.chained")  # where the SDK logs the failed chain
    run_cli("explain", "HPCLZ-CMP-010")
    chain.warning("DefaultAzureCredential failed to retrieve a token")
    assert "DefaultAzureCredential" not in capsys.readouterr().err
    run_cli("--verbose", "explain", "HPCLZ-CMP-010")  # -v: hpclz's own lines only
    chain.warning("DefaultAzureCredential failed to retrieve a token")
    assert "DefaultAzureCredential" not in capsys.readouterr().err
    run_cli("-vv", "explain", "HPCLZ-CMP-010")
    chain.warning("DefaultAzureCredential failed to retrieve a token")
    assert "WARNING azure.identity._credentials.chained: DefaultAzureCredential" in capsys.readouterr().err
    run_cli("explain", "HPCLZ-CMP-010")  # back to quiet for the tests that follow


def test_explain_prints_a_rules_documentation_from_the_package(run_cli: RunCli) -> None:
    result = run_cli("explain", "hpclz-cmp-010")
    assert result.exit_code == 0
    assert result.stdout.startswith("HPCLZ-CMP-010 (info): vCPUs needed per quota family")
    assert "quota" in result.stdout and "Fix: " in result.stdout
    wrong = run_cli("explain", "HPCLZ-CMP-1010")
    assert wrong.exit_code == ExitCode.USAGE and "did you mean" in wrong.stderr
    listing = json.loads(run_cli("explain", "--list", "-o", "json").stdout)
    assert len(listing["result"]["rules"]) > 60


def test_findings_point_at_docs_that_exist_after_pip_install(run_cli: RunCli) -> None:
    envelope = json.loads(run_cli("validate", AI, "-o", "json").stdout)
    for finding in envelope["findings"]:
        assert finding["docs"] == f"hpclz explain {finding['rule_id']}"
        assert run_cli(*finding["docs"].split()[1:]).exit_code == 0


def test_repeating_info_is_shown_only_with_verbose(run_cli: RunCli) -> None:
    quiet = run_cli("validate", AI)
    assert "HPCLZ-CMP-010 not shown" in quiet.stdout and "vCPUs at full scale" not in quiet.stdout
    loud = run_cli("--verbose", "validate", AI)
    assert "vCPUs at full scale per quota family" in loud.stdout
    run_cli("explain", "HPCLZ-CMP-010")
    # Scripts see everything: JSON output keeps the finding.
    envelope = json.loads(run_cli("validate", AI, "-o", "json").stdout)
    assert any(f["rule_id"] == "HPCLZ-CMP-010" for f in envelope["findings"])
