from __future__ import annotations

from pathlib import Path

from hpclz.config import load_config
from hpclz.findings import Severity
from hpclz.services.validate import ValidateOptions, validate
from tests.conftest import PRESETS

EXPECTED = {"energy", "finance", "manufacturing", "ai-training"}


def test_all_four_sector_presets_ship() -> None:
    assert {p.stem for p in PRESETS} == EXPECTED


def test_preset_loads_into_the_model(preset_path: Path) -> None:
    loaded = load_config(preset_path)
    assert loaded.config.metadata.name
    assert loaded.config.compute.partitions


def test_preset_validates_without_errors(preset_path: Path) -> None:
    result = validate(ValidateOptions(preset_path, fail_level=Severity.ERROR))
    assert result.ok, [f"{f.rule_id} {f.message}" for f in result.payload.failing]


def test_preset_cli_exit_code_is_zero(run_cli, preset_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("validate", str(preset_path))
    assert result.exit_code == 0, result.stderr
    assert "is valid" in result.stdout
