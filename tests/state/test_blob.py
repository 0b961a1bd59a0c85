"""Azure Blob backend specifics on Azurite: lease renewal, ETag conditions, credentials and reachability."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hpclz.azure.backends import open_backend
from hpclz.azure.blob_state import CONNECTION_STRING_ENV, BlobBackend
from hpclz.config.root import LandingZoneConfig
from hpclz.state.errors import StateConflictError, StateLockedError, StateStorageError
from hpclz.state.factory import new_state
from hpclz.state.guard import SecretGuard
from tests.state.conftest import UNREACHED_ACCOUNT, blob_config
from tests.support.azurite import Azurite

SHORTEST_LEASE_S = 15  # Azure's minimum finite lease


@pytest.fixture
def lz(config: LandingZoneConfig) -> LandingZoneConfig:
    return blob_config(config)


def _open(lz: LandingZoneConfig, config_file: Path) -> BlobBackend:
    backend = open_backend(lz, base_dir=config_file.parent, config_file=str(config_file))
    assert isinstance(backend, BlobBackend)
    return backend


def test_the_lease_is_renewed_so_the_lock_outlives_its_duration(
    blob_env: Azurite, lz: LandingZoneConfig, config_file: Path
) -> None:
    holder, other = _open(lz, config_file), _open(lz, config_file)
    holder.lease_seconds = SHORTEST_LEASE_S
    with holder.lock("deploy") as info:
        time.sleep(SHORTEST_LEASE_S + 2)  # without renewal the lease would have lapsed by now
        with pytest.raises(StateLockedError, match="'deploy'"), other.lock("destroy"):
            pass
        seen = other.lock_info()
        assert seen is not None and seen.id == info.id
        assert holder.write(new_state(lz)).serial == 1  # and the holder may still write
    assert other.lock_info() is None  # renewal stopped and the lease was released


def test_a_write_is_conditional_on_the_etag_not_only_the_serial(
    blob_env: Azurite, lz: LandingZoneConfig, config_file: Path
) -> None:
    backend = _open(lz, config_file)
    doc = backend.write(new_state(lz))
    assert backend.read() == doc
    # Someone rewrites the blob with the same serial (a hand edit, another tool): the ETag changes.
    blob = backend._container.get_blob_client(backend.blob_name)
    blob.upload_blob(doc.model_dump_json().replace('"outputs":{}', '"outputs":{"edited":true}'), overwrite=True)
    with pytest.raises(StateConflictError, match="ETag"):
        backend.write(doc)
    stored = _open(lz, config_file).read()
    assert stored is not None and stored.outputs == {"edited": True}


def test_the_connection_string_takes_precedence_and_wrong_keys_fail_in_one_line(
    azurite: Azurite, lz: LandingZoneConfig, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong_key = azurite.connection_string.replace("AccountKey=Eby8", "AccountKey=AAAA")
    monkeypatch.setenv(CONNECTION_STRING_ENV, wrong_key)
    with pytest.raises(StateStorageError, match=r"^cannot read state http://127\.0\.0\.1:\d+/.*: \S+$"):
        _open(lz, config_file).read()


def test_unreachable_storage_fails_in_one_line(monkeypatch: pytest.MonkeyPatch, azurite: Azurite) -> None:
    closed = azurite.connection_string.replace(f":{azurite.port}/", ":9/")  # discard port: nothing listens
    monkeypatch.setenv(CONNECTION_STRING_ENV, closed)
    # No retries here: the default backoff (2 + 4 + 8 s) would only add wall time to the same answer.
    backend = BlobBackend.connect(
        account_url=UNREACHED_ACCOUNT, container="hpclz-state", blob_name="x.json", retry_total=0, guard=SecretGuard()
    )
    with pytest.raises(StateStorageError, match=r"^cannot read the lock of state .*: storage unreachable \(\w+\)$"):
        backend.lock_info()
