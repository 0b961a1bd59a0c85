"""A Key Vault secret written in clear text fails validate at its line with the reference to write instead,
and the value is never echoed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO, CliResult

PLAIN = "plain-Text-Pa55word-4411"


def test_a_clear_text_vault_secret_is_an_error_naming_the_reference(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    text = (REPO / "configs" / "energy.yaml").read_text(encoding="utf-8")
    reference = "slurmdb-password: ${env:SLURMDB_PASSWORD}"
    assert reference in text
    config = tmp_path / "lz.yaml"
    config.write_text(text.replace(reference, f"slurmdb-password: {PLAIN}"), encoding="utf-8")
    line = next(n for n, row in enumerate(text.splitlines(), 1) if reference in row)
    result = run_cli("validate", str(config))
    assert result.exit_code != 0
    assert f"lz.yaml:{line}:" in result.stdout and "HPCLZ-IDN-010" in result.stdout
    assert "write `slurmdb-password: ${env:SLURMDB_PASSWORD}` and export SLURMDB_PASSWORD" in result.stdout
    assert PLAIN not in result.stdout + result.stderr
