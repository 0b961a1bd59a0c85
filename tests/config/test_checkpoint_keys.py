"""The checkpoint-integrity keys of a blob container: the signing key is only ever a reference."""

from __future__ import annotations

import pytest

from hpclz.config import load_config_text
from hpclz.errors import ConfigError
from tests.conftest import REPO

AI = (REPO / "configs" / "ai-training.yaml").read_text(encoding="utf-8")
KEY_LINE = "manifest_key: ${env:HPCLZ_MANIFEST_KEY}"


def test_the_preset_key_is_an_env_reference_and_stays_secret() -> None:
    container = load_config_text(AI, "lz.yaml").config.storage.blob.containers[1]  # type: ignore[union-attr]
    assert container.manifest_key is not None
    assert container.manifest_key.get_secret_value() == "${env:HPCLZ_MANIFEST_KEY}"
    assert "HPCLZ_MANIFEST_KEY" not in repr(container)


def test_a_literal_key_is_refused_with_file_line_and_field_but_never_echoed() -> None:
    assert KEY_LINE in AI
    # Reported at the container (its first key), so the rejected value is not echoed back.
    line = next(n for n, text in enumerate(AI.splitlines(), 1) if "- name: checkpoints" in text)
    with pytest.raises(ConfigError) as raised:
        load_config_text(AI.replace(KEY_LINE, "manifest_key: s3cr3t-in-the-file"), "lz.yaml")
    message = str(raised.value)
    assert f"lz.yaml:{line}" in message and "manifest_key" in message and "${env:NAME}" in message
    assert "s3cr3t-in-the-file" not in message


@pytest.mark.parametrize("days", [0, 146001])
def test_retention_stays_inside_what_azure_accepts(days: int) -> None:
    with pytest.raises(ConfigError, match="retention_days"):
        load_config_text(AI.replace("retention_days: 30", f"retention_days: {days}"), "lz.yaml")
