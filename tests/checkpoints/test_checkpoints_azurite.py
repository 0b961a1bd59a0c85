"""`hpclz checkpoints manifest|verify` on Azurite: a planted modification, a deleted blob and an extra blob."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from azure.storage.blob import BlobServiceClient, ContainerClient

from hpclz.azure.checkpoints import CONNECTION_STRING_ENV
from tests.conftest import REPO, CliResult
from tests.support.azurite import Azurite, azurite  # noqa: F401  (a fixture, used by name)

KEY_ENV = "HPCLZ_TEST_MANIFEST_KEY"


@pytest.fixture
def checkpoints(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> ContainerClient:  # noqa: F811
    """A fresh container per test on the session's Azurite, reached through the env var the adapter reads."""
    monkeypatch.setenv(CONNECTION_STRING_ENV, azurite.connection_string)
    service = BlobServiceClient.from_connection_string(azurite.connection_string)
    container = service.get_container_client(f"ckpt-{uuid.uuid4().hex[:16]}")
    container.create_container()
    # What a training job leaves behind: sharded weights and optimizer state per step.
    for name, body in {
        "run1/step-100/model-00001-of-00002.safetensors": b"weights shard 1",
        "run1/step-100/model-00002-of-00002.safetensors": b"weights shard 2",
        "run1/step-100/optimizer.pt": b"adam moments",
        "run10/step-1/model.safetensors": b"another run, outside prefix run1",
    }.items():
        container.upload_blob(name, body)
    return container


def write_config(tmp_path: Path, container: str, **extra: Any) -> Path:
    data = yaml.safe_load((REPO / "configs" / "ai-training.yaml").read_text())
    data["storage"]["blob"]["containers"] = [
        {"name": "datasets", "purpose": "datasets"},
        {"name": container, "purpose": "checkpoints", **extra},
    ]
    path = tmp_path / "lz.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def envelope(result: CliResult) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_verify_reports_modified_missing_and_unexpected(
    tmp_path: Path, checkpoints: ContainerClient, run_cli: Callable[..., CliResult]
) -> None:
    config = str(write_config(tmp_path, checkpoints.container_name))
    sealed = run_cli("checkpoints", "manifest", config, "--prefix", "run1", "-o", "json")
    assert sealed.exit_code == 0, sealed.stdout + sealed.stderr
    assert envelope(sealed)["result"]["containers"][0]["files"] == 3  # run10/ is not under run1/
    clean = run_cli("checkpoints", "verify", config, "--prefix", "run1")
    assert clean.exit_code == 0 and "3 blobs match" in clean.stdout and "all checkpoints intact" in clean.stdout

    checkpoints.upload_blob("run1/step-100/optimizer.pt", b"adam moments, silently edited", overwrite=True)
    checkpoints.delete_blob("run1/step-100/model-00002-of-00002.safetensors")
    checkpoints.upload_blob("run1/step-100/backdoor.py", b"import os")

    result = run_cli("checkpoints", "verify", config, "--prefix", "run1", "-o", "json")
    assert result.exit_code == 1
    body = envelope(result)
    assert not body["ok"] and body["command"] == "checkpoints verify"
    [check] = body["result"]["containers"]
    assert check["modified"] == ["run1/step-100/optimizer.pt"]
    assert check["missing"] == ["run1/step-100/model-00002-of-00002.safetensors"]
    assert check["unexpected"] == ["run1/step-100/backdoor.py"]
    assert check["matched"] == 1 and check["signature"] == "not-checked"
    human = run_cli("checkpoints", "verify", config, "--prefix", "run1")
    assert human.exit_code == 1 and "modified: run1/step-100/optimizer.pt" in human.stdout


def test_manifest_records_the_standard_digest(
    tmp_path: Path, checkpoints: ContainerClient, run_cli: Callable[..., CliResult]
) -> None:
    checkpoints.upload_blob("abc/x.bin", b"abc")
    config = str(write_config(tmp_path, checkpoints.container_name))
    assert run_cli("checkpoints", "manifest", config, "--prefix", "abc").exit_code == 0
    manifest = json.loads(checkpoints.download_blob("abc/hpclz-manifest.json").readall())
    # FIPS 180-2, appendix B.1: SHA-256("abc").
    sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert manifest["files"] == {"abc/x.bin": {"sha256": sha, "size": 3}}


def test_a_manifest_edited_to_hide_tampering_fails_its_signature(
    tmp_path: Path, checkpoints: ContainerClient, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "a-key-the-attacker-does-not-hold")
    config = str(write_config(tmp_path, checkpoints.container_name, manifest_key=f"${{env:{KEY_ENV}}}"))
    assert run_cli("checkpoints", "manifest", config).exit_code == 0
    assert (
        envelope(run_cli("checkpoints", "verify", config, "-o", "json"))["result"]["containers"][0]["signature"]
        == "valid"
    )

    # The attacker swaps a shard and rewrites the manifest's entry to match it.
    forged = b"poisoned weights"
    checkpoints.upload_blob("run1/step-100/model-00001-of-00002.safetensors", forged, overwrite=True)
    manifest = json.loads(checkpoints.download_blob("hpclz-manifest.json").readall())
    manifest["files"]["run1/step-100/model-00001-of-00002.safetensors"] = {
        "sha256": hashlib.sha256(forged).hexdigest(),
        "size": len(forged),
    }
    checkpoints.upload_blob("hpclz-manifest.json", json.dumps(manifest), overwrite=True)

    result = run_cli("checkpoints", "verify", config, "-o", "json")
    [check] = envelope(result)["result"]["containers"]
    assert result.exit_code == 1
    assert check["modified"] == [] and check["signature"] == "invalid"


def test_verify_without_a_manifest_is_one_line(
    tmp_path: Path, checkpoints: ContainerClient, run_cli: Callable[..., CliResult]
) -> None:
    result = run_cli("checkpoints", "verify", str(write_config(tmp_path, checkpoints.container_name)))
    assert result.exit_code == 1
    assert f"no manifest at {checkpoints.container_name}/hpclz-manifest.json" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_missing_signing_key_variable_is_a_usage_error(
    tmp_path: Path, checkpoints: ContainerClient, run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    config = str(write_config(tmp_path, checkpoints.container_name, manifest_key=f"${{env:{KEY_ENV}}}"))
    result = run_cli("checkpoints", "manifest", config)
    assert result.exit_code == 64
    assert f"environment variable {KEY_ENV} is not set" in result.stderr
    assert not list(checkpoints.list_blobs(name_starts_with="hpclz-manifest"))


def test_sealing_with_retention_reports_a_service_that_cannot_hold_it(
    tmp_path: Path, checkpoints: ContainerClient, run_cli: Callable[..., CliResult]
) -> None:
    """Azurite does not implement Set Blob Immutability Policy (it answers HTTP 501, "Current API is not implemented yet"): the seal
    must fail loudly, naming the blob, rather than report checkpoints as retained when they are not."""
    config = str(write_config(tmp_path, checkpoints.container_name, immutable=True, retention_days=30))
    result = run_cli("checkpoints", "manifest", config, "--prefix", "run1")
    assert result.exit_code == 5, result.stdout + result.stderr
    assert f"cannot set the retention policy on {checkpoints.container_name}/run1/" in result.stderr
    assert "HTTP 501 Current API is not implemented yet" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
