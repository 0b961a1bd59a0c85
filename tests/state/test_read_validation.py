"""State is validated when read: a hand-edited or foreign file is refused with one clear line, exit 1, and
`state show` never prints a secret planted in it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hpclz.azure.backends import open_backend
from hpclz.config.root import LandingZoneConfig
from hpclz.errors import ExitCode
from tests.conftest import CliResult
from tests.state.conftest import sample_state
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY

RunCli = Callable[..., CliResult]


def _stored(config: LandingZoneConfig, config_file: Path) -> tuple[Path, dict[str, Any]]:
    backend = open_backend(config, base_dir=config_file.parent)
    with backend.lock("deploy"):
        backend.write(sample_state(config))
    path = Path(backend.location)
    return path, json.loads(path.read_text())


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[last] = value


CASES = [
    # (id, field, value, fragment of the refusal)
    ("negative-serial", "serial", -1, "serial: Input should be greater than or equal to 0"),
    ("serial-as-text", "serial", "7", "serial: Input should be a valid integer"),
    ("serial-as-bool", "serial", True, "serial: Input should be a valid integer"),
    ("lineage-not-uuid", "lineage", "my-lineage", "lineage: String should match pattern"),
    ("schema-version-zero", "schema_version", 0, "schema_version: Input should be greater than or equal to 1"),
    ("schema-version-newer", "schema_version", 99, "newer than this hpclz understands"),
    ("unknown-top-level-field", "extra", {"x": 1}, "extra: Extra inputs are not permitted"),
    ("unknown-resource-field", "resources.0.owner", "someone", "resources.0.owner: Extra inputs are not permitted"),
    ("other-landing-zone", "landing_zone", "finance", "belongs to landing zone finance-prod"),
    ("other-environment", "environment", "dev", "belongs to landing zone energy-dev"),
]


@pytest.mark.parametrize(("field", "value", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_state_is_refused_on_read(  # type: ignore[no-untyped-def]
    run_cli: RunCli, config: LandingZoneConfig, config_file: Path, field: str, value: Any, fragment: str
) -> None:
    path, doc = _stored(config, config_file)
    _set(doc, field, value)
    path.write_text(json.dumps(doc))
    for command in (("state", "show"), ("plan",)):
        result = run_cli(*command, str(config_file))
        assert result.exit_code == ExitCode.FAILED, (command, result.stdout)
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith(f"error: state {path} ")
        assert fragment in line


@pytest.mark.parametrize(
    "content",
    [
        '{"who": "x"}',
        "not json",
        '{"id": "1", "who": "a@b", "operation": "deploy", "pid": -4, "created": "2026-01-01T00:00:00Z", "hpclz_version": "0"}',
        '{"operation": "deploy", "colour": "red"}',
    ],
    ids=["missing-operation", "not-json", "negative-pid", "unknown-field"],
)
def test_garbage_lock_record_is_refused_by_name(
    run_cli: RunCli, config_file: Path, config: LandingZoneConfig, content: str
) -> None:
    path, _ = _stored(config, config_file)
    info = path.parent / "lock.json"
    info.write_text(content)
    result = run_cli("state", "show", str(config_file))
    assert result.exit_code == ExitCode.FAILED
    assert result.stderr.startswith(f"error: lock record {info} is not an hpclz lock record: ")
    assert "state unlock" in result.stderr  # the way out
    assert run_cli("state", "unlock", str(config_file), "--force").exit_code == ExitCode.OK
    assert run_cli("state", "show", str(config_file)).exit_code == ExitCode.OK


# Azurite's published account (learn.microsoft.com/azure/storage/common/storage-use-azurite): the shape of a
# real storage connection string, as an ARM output named like a credential would carry it.
PLANTED = (
    f"DefaultEndpointsProtocol=https;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};EndpointSuffix=core.windows.net"
)


def test_state_show_masks_a_planted_secret(run_cli: RunCli, config: LandingZoneConfig, config_file: Path) -> None:
    path, doc = _stored(config, config_file)
    doc["outputs"]["storageConnection"] = PLANTED
    doc["outputs"]["adminPassword"] = "hunter2-hunter2"
    path.write_text(json.dumps(doc))
    text = run_cli("state", "show", str(config_file))
    as_json = run_cli("state", "show", str(config_file), "-o", "json")
    for result in (text, as_json):
        assert result.exit_code == ExitCode.OK
        assert ACCOUNT_KEY not in result.stdout and "hunter2" not in result.stdout
    outputs = json.loads(as_json.stdout)["result"]["outputs"]
    assert outputs["storageConnection"] == "<masked: storage account key in a connection string>"
    assert outputs["adminPassword"].startswith("<masked: a literal value under a credential-like name")
    assert outputs["vnetId"].startswith("/subscriptions/")  # ordinary outputs are untouched


def test_state_folder_that_cannot_be_created_is_a_clear_error(run_cli: RunCli, config_file: Path) -> None:
    """A file where the state folder should be fails for root too (unlike a chmod-ed folder)."""
    (config_file.parent / ".hpclz").write_text("not a folder\n")
    from hpclz.config.loader import load_config

    backend = open_backend(load_config(config_file).config, base_dir=config_file.parent)
    from hpclz.state.errors import StateStorageError

    with pytest.raises(StateStorageError, match=r"cannot use state folder .*: File exists"), backend.lock("deploy"):
        pass


def test_blob_state_of_another_landing_zone_is_refused(
    run_cli: RunCli, blob_env: Any, config: LandingZoneConfig, config_file: Path
) -> None:
    import re
    import uuid

    container = f"t{uuid.uuid4().hex[:20]}"
    text, edits = re.subn(
        r"^state:\n  backend: local.*$",
        f"state:\n  backend: azure_blob\n  account_url: https://sthpclzcli.blob.core.windows.net\n  container: {container}",
        config_file.read_text(),
        flags=re.M,
    )
    assert edits == 1
    config_file.write_text(text)
    from hpclz.config.loader import load_config

    blob = load_config(config_file).config
    foreign = blob.model_copy(update={"metadata": blob.metadata.model_copy(update={"name": "finance"})})
    backend = open_backend(foreign, base_dir=config_file.parent)
    backend.zone = None  # type: ignore[attr-defined]  # plant the foreign document where this zone's state lives
    backend.blob_name = open_backend(blob, base_dir=config_file.parent).blob_name  # type: ignore[attr-defined]
    with backend.lock("deploy"):
        backend.write(sample_state(foreign))
    result = run_cli("state", "show", str(config_file))
    assert result.exit_code == ExitCode.FAILED
    assert "belongs to landing zone finance-prod" in result.stderr and "not energy-prod" in result.stderr
