"""A Key Vault secret reaches ARM as a secureString parameter and nowhere else: not state, not any file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RunCli
from tests.support.arm_standin import ArmStandIn

SECOND = "two-S3cret-value-7731"
FROM_ENV = "env-S3cret-value-9124"


def test_secrets_reach_arm_but_no_file(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LICENCE_KEY", FROM_ENV)
    monkeypatch.setenv("API_TOKEN", SECOND)  # a secret written in clear text is refused (HPCLZ-IDN-010)
    # Beside the preset's own secret (Slurm accounting's database password, from SLURMDB_PASSWORD).
    text = zone.read_text().replace(
        "    secrets:\n",
        "    secrets:\n      licence-key: ${env:LICENCE_KEY}\n      api-token: ${env:API_TOKEN}\n",
    )
    assert text != zone.read_text()
    zone.write_text(text)

    result = run_cli("deploy", str(zone), "--yes", "-o", "json")
    assert result.exit_code == 0, result.stderr

    sent = next(r.body for k, r in arm.world.deployments.items() if k.endswith("-identity"))
    values = {v["value"] for v in sent["properties"]["parameters"].values()}
    assert {SECOND, FROM_ENV} <= values
    assert SECOND not in result.stdout + result.stderr and FROM_ENV not in result.stdout + result.stderr
    written = [p for p in zone.parent.rglob("*") if p.is_file() and p != zone]
    assert written, "deploy wrote no files"
    for path in written:
        data = path.read_bytes()
        assert SECOND.encode() not in data and FROM_ENV.encode() not in data, path
