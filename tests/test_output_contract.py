"""The JSON envelope is a contract: scripts parse its top-level keys."""

from __future__ import annotations

import json
from pathlib import Path

from hpclz.output import ENVELOPE_KEYS
from tests.conftest import REPO

FINDING_KEYS = {"rule_id", "severity", "title", "message", "path", "file", "line", "column", "fix", "docs"}
ERROR_KEYS = {"code", "message", "file", "line", "column", "path"}


def test_success_envelope_has_the_fixed_keys(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("validate", str(REPO / "configs" / "energy.yaml"), "--output", "json")
    envelope = json.loads(result.stdout)
    assert tuple(envelope) == ENVELOPE_KEYS
    assert envelope["envelope_version"] == "1"
    assert envelope["command"] == "validate"
    assert envelope["ok"] is True and envelope["exit_code"] == result.exit_code == 0
    assert set(envelope["result"]) == {"file", "fail_level", "counts", "suppressed", "rules_run"}
    assert set(envelope["result"]["counts"]) == {"error", "warning", "info"}
    for finding in envelope["findings"]:
        assert set(finding) == FINDING_KEYS


def test_error_envelope_has_the_fixed_keys(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.yaml"
    bad.write_text("metadata: {name: x}\n")
    result = run_cli("validate", str(bad), "-o", "json")
    envelope = json.loads(result.stdout)
    assert tuple(envelope) == ENVELOPE_KEYS
    assert envelope["ok"] is False and envelope["exit_code"] == result.exit_code == 3
    assert envelope["errors"], "a config error must be listed"
    for error in envelope["errors"]:
        assert set(error) == ERROR_KEYS
        assert error["file"] == str(bad) and error["line"] >= 1
    assert result.stderr == ""
