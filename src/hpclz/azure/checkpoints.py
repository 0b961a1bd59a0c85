"""Blob access for `hpclz checkpoints manifest|verify`: list and hash a container's blobs, read and write the manifest.

Hashing streams each blob in chunks, so a multi-GB checkpoint never sits in memory. The storage SDK is imported
when a store is opened, so other commands never load it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hpclz.errors import ExitCode, HpclzError

CONNECTION_STRING_ENV = "HPCLZ_CHECKPOINTS_CONNECTION_STRING"


class CheckpointStorageError(HpclzError):
    exit_code = ExitCode.AZURE_ERROR


@dataclass(frozen=True)
class BlobDigest:
    name: str
    sha256: str
    size: int
    version_id: str | None = None  # the version hashed, where the account keeps versions


class CheckpointStore:
    """One container of the checkpoint account, through the real azure-storage-blob client."""

    def __init__(self, container: Any):
        self._container = container

    @classmethod
    def connect(cls, *, account_url: str, container: str, credential: Any = None) -> CheckpointStore:
        """HPCLZ_CHECKPOINTS_CONNECTION_STRING (Azurite, an account key) wins over `account_url` + credential."""
        from hpclz.azure.clients import blob_service_client

        service = blob_service_client(
            account_url, connection_string=os.environ.get(CONNECTION_STRING_ENV), credential=credential
        )
        return cls(service.get_container_client(container))

    @property
    def name(self) -> str:
        return str(self._container.container_name)

    def digests(self, prefix: str, *, skip: Callable[[str], bool]) -> Iterator[BlobDigest]:
        """SHA-256 of every blob under `prefix` (its current version), except those `skip` names (manifests)."""
        with _errors(f"list container {self.name}"):
            names = [props.name for props in self._container.list_blobs(name_starts_with=prefix or None)]
        for name in names:
            if not skip(name):
                yield self._digest(name)

    def _digest(self, name: str) -> BlobDigest:
        sha, size = hashlib.sha256(), 0
        with _errors(f"read {self.name}/{name}"):
            download = self._container.download_blob(name)
            for chunk in download.chunks():
                sha.update(chunk)
                size += len(chunk)
        version = getattr(download.properties, "version_id", None)
        return BlobDigest(name=name, sha256=sha.hexdigest(), size=size, version_id=version)

    def seal(self, name: str, version_id: str | None, *, until: datetime, locked: bool) -> None:
        """A time-based retention policy on one blob version (Set Blob Immutability Policy, service version
        2020-06-12+: learn.microsoft.com/rest/api/storageservices/set-blob-immutability-policy). The container
        must have version-level immutability support; Azurite answers APINotImplemented."""
        from azure.storage.blob import ImmutabilityPolicy

        policy = ImmutabilityPolicy(expiry_time=until, policy_mode="Locked" if locked else "Unlocked")
        with _errors(f"set the retention policy on {self.name}/{name}"):
            self._container.get_blob_client(name, version_id=version_id).set_immutability_policy(policy)

    def read_text(self, name: str) -> str | None:
        from azure.core.exceptions import ResourceNotFoundError

        with _errors(f"read {self.name}/{name}"):
            try:
                data: bytes = self._container.download_blob(name).readall()
            except ResourceNotFoundError as exc:
                if getattr(exc, "error_code", None) == "ContainerNotFound":
                    raise
                return None
        return data.decode("utf-8")

    def write_text(self, name: str, text: str) -> str | None:
        """Overwriting keeps the previous manifest as a blob version where the account has versioning on (sealed,
        where it was sealed). Returns the new version's ID, if the account keeps versions."""
        with _errors(f"write {self.name}/{name}"):
            written = self._container.get_blob_client(name).upload_blob(text.encode("utf-8"), overwrite=True)
        version: str | None = written.get("version_id")
        return version


@contextlib.contextmanager
def _errors(action: str) -> Iterator[None]:
    """A missing container or blob, refused credentials and service errors become one line each."""
    from azure.core.exceptions import HttpResponseError, ResourceNotFoundError, ServiceRequestError

    try:
        yield
    except ResourceNotFoundError as exc:
        what = "the container" if getattr(exc, "error_code", None) == "ContainerNotFound" else "it"
        raise CheckpointStorageError(f"cannot {action}: {what} does not exist") from None
    except ServiceRequestError as exc:
        raise CheckpointStorageError(f"cannot {action}: storage unreachable ({type(exc).__name__})") from None
    except HttpResponseError as exc:
        raise CheckpointStorageError(f"cannot {action}: {_describe(exc)}") from None


def _describe(exc: Any) -> str:
    """The service's error code; where the SDK could not parse one (a 501 from an emulator), status and reason."""
    from hpclz.azure.errors import storage_code

    code = storage_code(exc)
    if code:
        return code
    status = getattr(exc, "status_code", None)
    if status is None:  # refused before any response, e.g. no credential could get a token
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    reason = str(getattr(exc, "reason", "") or "").split(". ")[0]
    return f"HTTP {status} {reason}".strip()
