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
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    result = run_cli("verify", str(CONFIG), "-o", "json")
    envelope = json.loads(result.stdout)
    # Without Slurm here, verify goes to the scheduler through Azure (tests/verify/test_remote.py); without a
    # subscription it cannot, and says both why Azure came into it and what to do instead.
    assert result.exit_code == 64 and envelope["exit_code"] == 64
    assert envelope["errors"][0]["message"].startswith("no Azure subscription")


def test_via_slurm_without_a_slurm_client_says_so(
    run_cli: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.delenv("HPCLZ_SLURM_BIN", raising=False)
    result = run_cli("verify", str(CONFIG), "--via", "slurm", "-o", "json")
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


def _local(run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, config: Path, *args: str) -> CliResult:
    monkeypatch.setenv("HPCLZ_VERIFY_FIXTURES", str(FIXTURES / "h200-faults" / "xid79"))
    monkeypatch.setenv("PATH", "/nonexistent")
    return run_cli("verify", str(config), "--local", "-o", "json", *args)


def test_failing_checks_are_findings_in_the_envelope(
    run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    envelope = json.loads(_local(run_cli, monkeypatch, CONFIG).stdout)
    [finding] = [f for f in envelope["findings"] if f["severity"] == "error"]
    assert finding["rule_id"] == "HPCLZ-VFY-006" and finding["path"].startswith("node.")
    assert "Xid 79" in finding["message"] and envelope["result"]["suppressed"] == []


def test_the_configs_suppress_list_silences_a_verify_check(
    run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "ai-training.yaml"
    config.write_text(CONFIG.read_text() + "\nsuppress: [HPCLZ-VFY-006]\n")
    result = _local(run_cli, monkeypatch, config)
    envelope = json.loads(result.stdout)
    assert result.exit_code == 0 and envelope["result"]["bad_nodes"] == {}
    assert "HPCLZ-VFY-006" not in {f["rule_id"] for f in envelope["findings"]}
    assert envelope["result"]["suppressed"] == ["HPCLZ-VFY-006"]
    [xid] = [c for c in envelope["result"]["nodes"][0]["checks"] if c["check_id"] == "HPCLZ-VFY-006"]
    assert xid["status"] == "fail" and xid["suppressed"] is True  # still reported as measured


def test_suppress_on_the_command_line_and_unknown_ids(
    run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _local(run_cli, monkeypatch, CONFIG, "--suppress", "hpclz-vfy-006").exit_code == 0
    wrong = _local(run_cli, monkeypatch, CONFIG, "--suppress", "HPCLZ-VFY-606")
    assert wrong.exit_code == 64 and "--suppress HPCLZ-VFY-606: unknown rule ID" in wrong.stdout


def test_a_machine_without_slurm_configuration_is_told_where_verify_runs(
    run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a workstation with Slurm's client but no slurm.conf, the real sinfo ends in "Could not establish a
    configuration source"; the user gets one line saying where verify has to run instead."""
    import shutil

    from tests.conftest import require

    require(shutil.which("sinfo") is not None and not Path("/etc/slurm/slurm.conf").exists(), "a bare Slurm client")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.delenv("HPCLZ_SLURM_BIN", raising=False)
    result = run_cli("verify", str(CONFIG))
    assert result.exit_code == 64
    assert result.stderr.startswith("error: this machine has no Slurm configuration (sinfo: fatal: Could not establish")
    assert result.stderr.count("\n") == 1 and "--slurm-conf" in result.stderr
