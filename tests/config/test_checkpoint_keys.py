"""The checkpoint-integrity keys of a blob container: the signing key is only ever a reference."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hpclz.config import load_config_text
from hpclz.config.base import Disabled
from hpclz.config.root import LandingZoneConfig
from hpclz.errors import ConfigError
from hpclz.plan.config_diff import config_snapshot
from tests.conftest import REPO, CliResult

AI = (REPO / "configs" / "ai-training.yaml").read_text(encoding="utf-8")
KEY_LINE = "manifest_key: ${env:HPCLZ_MANIFEST_KEY}"


def test_the_preset_key_is_an_env_reference_and_stays_secret() -> None:
    blob = load_config_text(AI, "lz.yaml").config.storage.blob
    assert not isinstance(blob, Disabled)
    container = blob.containers[1]
    assert container.manifest_key is not None
    assert container.manifest_key.get_secret_value() == "${env:HPCLZ_MANIFEST_KEY}"
    assert "HPCLZ_MANIFEST_KEY" not in repr(container)


def test_the_redacted_snapshot_state_keeps_still_loads() -> None:
    """plan's cost delta and config diff read the applied config back from state, secrets masked."""
    snapshot = config_snapshot(load_config_text(AI, "lz.yaml").config)
    assert snapshot["storage"]["blob"]["containers"][1]["manifest_key"] == "**********"
    LandingZoneConfig.model_validate(snapshot)


def test_a_literal_key_fails_validate_at_its_line_but_is_never_echoed(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    line = next(n for n, text in enumerate(AI.splitlines(), 1) if KEY_LINE in text)
    config = tmp_path / "lz.yaml"
    config.write_text(AI.replace(KEY_LINE, "manifest_key: s3cr3t-in-the-file"), encoding="utf-8")
    result = run_cli("validate", str(config))
    assert result.exit_code != 0
    assert f"lz.yaml:{line}:" in result.stdout and "HPCLZ-STO-056" in result.stdout
    assert "s3cr3t-in-the-file" not in result.stdout + result.stderr
    refused = run_cli("checkpoints", "verify", str(config))
    assert refused.exit_code == 3 and "manifest_key" in refused.stderr
    assert "s3cr3t-in-the-file" not in refused.stdout + refused.stderr


@pytest.mark.parametrize("days", [0, 146001])
def test_retention_stays_inside_what_azure_accepts(days: int) -> None:
    with pytest.raises(ConfigError, match="retention_days"):
        load_config_text(AI.replace("retention_days: 30", f"retention_days: {days}"), "lz.yaml")


def test_a_malformed_reference_in_manifest_key_is_refused_like_a_vault_secrets() -> None:
    with pytest.raises(ConfigError, match="malformed secret reference"):
        load_config_text(AI.replace(KEY_LINE, "manifest_key: ${env:HPCLZ_MANIFEST_KEY}x"), "lz.yaml")


def test_references_elsewhere_in_a_container_are_still_refused() -> None:
    edited = AI.replace("- {name: datasets, purpose: datasets}", "- {name: datasets, purpose: '${env:P}'}")
    assert edited != AI
    with pytest.raises(ConfigError, match=r"resolved only in identity\.key_vault\.secrets"):
        load_config_text(edited, "lz.yaml")
