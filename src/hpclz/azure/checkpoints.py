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
            for chunk in self._container.download_blob(name).chunks():
                sha.update(chunk)
                size += len(chunk)
        return BlobDigest(name=name, sha256=sha.hexdigest(), size=size)

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

    def write_text(self, name: str, text: str) -> None:
        """Overwriting keeps the previous manifest as a blob version where the account has versioning on,
        and fails where version-level immutability protects it: both are the point."""
        with _errors(f"write {self.name}/{name}"):
            self._container.upload_blob(name, text.encode("utf-8"), overwrite=True)


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
        code = getattr(exc, "error_code", None) or getattr(exc, "status_code", "error")
        raise CheckpointStorageError(f"cannot {action}: {code}") from None
