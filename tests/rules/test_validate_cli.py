"""`hpclz validate`: --fail-level, --suppress, the config's suppress: list, and what people and scripts see."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpclz.errors import ExitCode
from tests.conftest import REPO, RunCli

# Shows HPCLZ-MON-002 (a warning) and CMP-010, ZON-002 and MNT-031 (info) on purpose.
AI = str(REPO / "configs" / "ai-training.yaml")


@pytest.mark.parametrize(
    ("level", "code"),
    [("error", ExitCode.OK), ("warning", ExitCode.FAILED), ("info", ExitCode.FAILED)],
)
def test_fail_level_decides_the_exit_code(run_cli: RunCli, level: str, code: ExitCode) -> None:
    assert run_cli("validate", AI, "--fail-level", level).exit_code == code


def test_cli_suppress_silences_a_rule_and_says_so(run_cli: RunCli) -> None:
    result = run_cli(
        "validate",
        AI,
        "--fail-level",
        "warning",
        "--suppress",
        "hpclz-mon-002",
        "--suppress",
        "HPCLZ-ZON-002",
        "--suppress",
        "HPCLZ-CMP-021",
    )
    assert result.exit_code == ExitCode.OK
    assert "HPCLZ-MON-002" not in result.stdout.split("suppressed:")[0]
    assert "suppressed: HPCLZ-CMP-021, HPCLZ-MON-002" in result.stdout


def test_config_suppress_list_silences_a_rule(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "lz.yaml"
    path.write_text(
        Path(AI).read_text(encoding="utf-8") + "\nsuppress: [HPCLZ-MON-002, HPCLZ-ZON-002, HPCLZ-CMP-021]\n",
        encoding="utf-8",
    )
    assert run_cli("validate", str(path), "--fail-level", "warning").exit_code == ExitCode.OK


def test_unknown_suppressed_id_is_refused_with_its_line(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "lz.yaml"
    text = Path(AI).read_text(encoding="utf-8") + "\nsuppress:\n  - HPCLZ-MON-902\n"
    path.write_text(text, encoding="utf-8")
    result = run_cli("validate", str(path))
    assert result.exit_code == ExitCode.CONFIG_INVALID
    line = text.splitlines().index("  - HPCLZ-MON-902") + 1
    assert f"lz.yaml:{line}:" in result.stderr and "HPCLZ-MON-902" in result.stderr
    assert "Traceback" not in result.stderr
    cli = run_cli("validate", AI, "--suppress", "HPCLZ-NOPE-001")
    assert cli.exit_code == ExitCode.USAGE and "HPCLZ-NOPE-001" in cli.stderr


def test_every_unknown_suppressed_id_is_a_located_json_error(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "lz.yaml"
    text = (
        Path(AI).read_text(encoding="utf-8") + "\nsuppress:\n  - HPCLZ-MON-902\n  - HPCLZ-MON-002\n  - HPCLZ-NET-999\n"
    )
    path.write_text(text, encoding="utf-8")
    result = run_cli("validate", str(path), "--output", "json")
    assert result.exit_code == ExitCode.CONFIG_INVALID
    errors = json.loads(result.stdout)["errors"]
    lines = text.splitlines()
    assert [(e["path"], e["line"], e["file"]) for e in errors] == [
        ("suppress[0]", lines.index("  - HPCLZ-MON-902") + 1, str(path)),
        ("suppress[2]", lines.index("  - HPCLZ-NET-999") + 1, str(path)),
    ]


def test_render_plan_and_deploy_refuse_unknown_suppressions_too() -> None:
    """They share check_config with validate, so a misspelt ID is refused there as well."""
    from hpclz.config import load_config, load_config_text
    from hpclz.errors import HpclzError
    from hpclz.services.validate import check_config

    with pytest.raises(HpclzError, match="--suppress HPCLZ-NOPE-001") as cli:
        check_config(load_config(AI), ["HPCLZ-NOPE-001"])
    assert cli.value.exit_code == ExitCode.USAGE
    listed = load_config_text(Path(AI).read_text(encoding="utf-8") + "\nsuppress: [HPCLZ-MON-902]\n", "lz.yaml")
    with pytest.raises(HpclzError, match="HPCLZ-MON-902") as config:
        check_config(listed)
    assert config.value.exit_code == ExitCode.CONFIG_INVALID


def test_human_output_names_file_line_rule_path_and_fix(run_cli: RunCli) -> None:
    out = run_cli("validate", AI, "--fail-level", "warning").stdout
    line = next(
        n for n, text in enumerate(Path(AI).read_text().splitlines(), 1) if text.startswith("  retention_days")
    )  # monitoring.retention_days
    assert f"ai-training.yaml:{line}:3: warning HPCLZ-MON-002 Production log retention under 90 days" in out
    assert "monitoring.retention_days: logs are kept 30 days" in out
    assert "fix: Raise monitoring.retention_days" in out
    assert (
        "fails at --fail-level warning (0 errors, 2 warnings, 4 info;" in out
    )  # warnings: MON-002, CMP-021 (nothing pins cyclecloud-slurm); info: HPCLZ-MNT-031, ZON-002, CMP-010, CMP-047


def test_config_paths_with_list_names_survive_rich_markup(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "lz.yaml"
    path.write_text(
        Path(AI)
        .read_text(encoding="utf-8")
        .replace("gpu_clocks: max          #", "gpu_clocks: max\n      spot_max_price: 2  #")
    )
    out = run_cli("validate", str(path), "--fail-level", "warning").stdout
    assert "compute.partitions[h100].spot_max_price" in out


def test_json_output_carries_every_finding_with_location(run_cli: RunCli) -> None:
    result = run_cli("validate", AI, "--output", "json", "--fail-level", "warning")
    envelope = json.loads(result.stdout)
    assert envelope["ok"] is False and envelope["exit_code"] == ExitCode.FAILED
    mon = next(f for f in envelope["findings"] if f["rule_id"] == "HPCLZ-MON-002")
    assert mon["severity"] == "warning" and mon["line"] and mon["path"] == "monitoring.retention_days"
    assert mon["docs"] == "hpclz explain HPCLZ-MON-002"
    assert envelope["result"]["counts"] == {"error": 0, "warning": 2, "info": 4}


def test_live_preflight_ids_may_be_suppressed_in_the_config(run_cli: RunCli, tmp_path: Path) -> None:
    from hpclz.rules.live import LIVE_RULES

    path = tmp_path / "lz.yaml"
    path.write_text(Path(AI).read_text(encoding="utf-8") + f"\nsuppress: [{LIVE_RULES[0].id}]\n", encoding="utf-8")
    assert run_cli("validate", str(path)).exit_code == ExitCode.OK
