"""Azure Blob state: one JSON blob, locked by a lease on a sidecar `<blob>.lock` blob.

- Lock: a lease (renewed in the background) on `<blob>.lock`, whose metadata records the holder.
  The lock lives on a sidecar so the state blob can be written with a plain ETag condition and a
  first deployment can lock before any state exists.
- Writes: If-Match the ETag read (create-only when there was none); a 412/409 is a conflict.
- History: blob versions where the account has versioning on; otherwise the previous version is
  copied to `<blob>.history/<serial>.json` before each overwrite (Azurite has no versioning).
- Auth: HPCLZ_STATE_CONNECTION_STRING when set, else `credential` or the Azure adapter's credential.

This backend implements hpclz.state.backend.StateBackend inside the Azure adapter, so the state package
never imports Azure. The storage SDK (clients.blob_service_client, hpclz.azure.storage) is imported when
this backend is opened, so other commands never load it.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from hpclz.azure.clients import BLOB_RETRY_TOTAL
from hpclz.state.backend import DEFAULT_KEEP, HistoryEntry, check_owner, next_version, parse_state
from hpclz.state.errors import StateConflictError, StateLockedError
from hpclz.state.guard import SecretGuard
from hpclz.state.lease import LeaseRenewer, check_lease_duration
from hpclz.state.lockinfo import LockInfo, locked_error_message, unlock_hint
from hpclz.state.model import StateDocument

log = logging.getLogger(__name__)

CONNECTION_STRING_ENV = "HPCLZ_STATE_CONNECTION_STRING"
DEFAULT_LEASE_S = 30
LOCK_META_KEY = "hpclzlock"  # base64 JSON: metadata values must be plain ASCII header values
_UNREAD = object()


class BlobBackend:
    def __init__(
        self,
        container: Any,
        blob_name: str,
        *,
        guard: SecretGuard,
        lease_seconds: int = DEFAULT_LEASE_S,
        keep: int = DEFAULT_KEEP,
        config_file: str | None = None,
        zone: str | None = None,
    ):
        self._container = container
        self.zone = zone  # `<name>-<environment>` the state must belong to; None skips the check
        self.blob_name = blob_name
        self.guard = guard
        self.lease_seconds = lease_seconds
        self.keep = keep
        self._config_file = config_file
        self._read_etag: object = _UNREAD
        self._renewer: LeaseRenewer | None = None

    @classmethod
    def connect(
        cls,
        *,
        account_url: str,
        container: str,
        blob_name: str,
        credential: Any = None,
        retry_total: int = BLOB_RETRY_TOTAL,
        **options: Any,
    ) -> BlobBackend:
        from hpclz.azure.clients import blob_service_client

        service = blob_service_client(
            account_url,
            connection_string=os.environ.get(CONNECTION_STRING_ENV),
            credential=credential,
            retry_total=retry_total,
        )
        return cls(service.get_container_client(container), blob_name, **options)

    @property
    def location(self) -> str:
        return f"{self._container.url}/{self.blob_name}"

    @property
    def _blob(self) -> Any:
        return self._container.get_blob_client(self.blob_name)

    @property
    def _lock_blob(self) -> Any:
        return self._container.get_blob_client(f"{self.blob_name}.lock")

    def _history_name(self, serial: int) -> str:
        return f"{self.blob_name}.history/{serial}.json"

    def read(self) -> StateDocument | None:
        doc, etag, _ = self._download()
        log.info("read state %s: %s", self.location, f"serial {doc.serial}" if doc else "none yet")
        if doc is not None and self.zone is not None:
            check_owner(doc, self.zone, self.location)
        self._read_etag = etag
        return doc

    def _download(self) -> tuple[StateDocument | None, str | None, str | None]:
        """(document, ETag, version id) of the current blob; (None, None, None) when there is none."""
        from hpclz.azure.storage import ResourceNotFoundError

        try:
            with _storage_errors(f"read state {self.location}"):
                downloader = self._blob.download_blob()
                raw = downloader.readall()
        except ResourceNotFoundError:
            return None, None, None
        props = downloader.properties
        return parse_state(raw, self.location), props.etag, props.version_id

    def write(self, doc: StateDocument) -> StateDocument:
        self._check_still_locked()
        stored, etag, version_id = self._download()
        if self._read_etag is not _UNREAD and etag != self._read_etag:
            raise StateConflictError(
                f"state {self.location} changed since it was read (ETag {self._read_etag} -> {etag}): "
                "another run wrote it; re-run to start from the current state"
            )
        new = next_version(stored, doc, self.location)
        text = new.model_dump_json(indent=2) + "\n"
        self.guard.check_text(text, self.location)
        if stored is not None and version_id is None:
            self._archive(stored)
        self._upload(text.encode(), new, etag)
        return new

    def _check_still_locked(self) -> None:
        """A lease broken by `unlock --force` or lapsed must stop this run's writes: someone else may hold it now."""
        renewer = self._renewer
        if renewer is None:
            return
        reason = renewer.lost or renewer.renew_now()
        if reason:
            raise StateLockedError(f"lost the lock on state {self.location} ({reason}); nothing written, re-run")

    def _upload(self, data: bytes, new: StateDocument, etag: str | None) -> None:
        from hpclz.azure.storage import MatchConditions, ResourceExistsError, ResourceModifiedError

        metadata = _metadata(new)
        try:
            with _storage_errors(f"write state {self.location}"):
                if etag is None:
                    self._ensure_container()
                    # overwrite=False is create-only (If-None-Match: *); etag='*' raises TypeError in 12.31.
                    result = self._blob.upload_blob(data, overwrite=False, metadata=metadata)
                else:
                    result = self._blob.upload_blob(
                        data,
                        overwrite=True,
                        metadata=metadata,
                        etag=etag,
                        match_condition=MatchConditions.IfNotModified,
                    )
        except (ResourceExistsError, ResourceModifiedError):
            raise StateConflictError(
                f"state {self.location} was written by another run while this one was writing "
                f"(serial {new.serial - 1} is no longer current); nothing written, re-run"
            ) from None
        self._read_etag = result["etag"]

    def _archive(self, stored: StateDocument) -> None:
        with _storage_errors(f"keep previous state of {self.location}"):
            self._container.get_blob_client(self._history_name(stored.serial)).upload_blob(
                stored.model_dump_json(indent=2).encode(),
                overwrite=True,
                metadata=_metadata(stored),
            )
            for entry in self._archived()[self.keep :]:
                self._container.delete_blob(entry.location)

    def _archived(self) -> list[HistoryEntry]:
        items = self._container.list_blobs(name_starts_with=f"{self.blob_name}.history/", include=["metadata"])
        return _newest_first(_entry(item, item.name) for item in items)

    def _versions(self) -> list[HistoryEntry]:
        items = self._container.list_blobs(name_starts_with=self.blob_name, include=["versions", "metadata"])
        return _newest_first(
            _entry(item, item.version_id)
            for item in items
            if item.name == self.blob_name and item.version_id and not item.is_current_version
        )

    def history(self) -> list[HistoryEntry]:
        from hpclz.azure.storage import ResourceNotFoundError

        try:
            with _storage_errors(f"list previous states of {self.location}"):
                by_serial = {e.serial: e for e in [*self._archived(), *self._versions()]}
        except ResourceNotFoundError:  # no container yet: nothing was ever written
            return []
        return sorted(by_serial.values(), key=lambda e: e.serial, reverse=True)

    def read_version(self, serial: int) -> StateDocument | None:
        for entry in self.history():
            if entry.serial == serial:
                with _storage_errors(f"read state version {serial} of {self.location}"):
                    if entry.location.startswith(f"{self.blob_name}.history/"):
                        raw = self._container.get_blob_client(entry.location).download_blob().readall()
                    else:
                        raw = self._blob.download_blob(version_id=entry.location).readall()
                return parse_state(raw, self.location)
        return None

    def _ensure_container(self) -> None:
        from hpclz.azure.storage import ResourceExistsError

        with contextlib.suppress(ResourceExistsError):
            self._container.create_container()

    @contextlib.contextmanager
    def lock(self, operation: str) -> Iterator[LockInfo]:
        from hpclz.azure.storage import ResourceExistsError

        check_lease_duration(self.lease_seconds)  # before acquiring: a bad value must not leave a lease behind
        with _storage_errors(f"lock state {self.location}"):
            self._ensure_container()
            with contextlib.suppress(ResourceExistsError):
                self._lock_blob.upload_blob(b"", overwrite=False)
            try:
                lease = self._lock_blob.acquire_lease(lease_duration=self.lease_seconds)
            except ResourceExistsError:  # 409 LeaseAlreadyPresent
                raise StateLockedError(
                    locked_error_message(self.location, self.lock_info()), hint=unlock_hint(self._config_file)
                ) from None
            info = LockInfo.for_operation(operation)
            try:
                self._lock_blob.set_blob_metadata({LOCK_META_KEY: _encode(info)}, lease=lease)
            except BaseException:
                with contextlib.suppress(Exception):  # the original error is the one worth reporting
                    lease.release()
                raise
        renewer = LeaseRenewer(lease, self.lease_seconds)
        self._renewer = renewer
        renewer.start()
        try:
            yield info
        finally:
            renewer.stop()
            self._renewer = None
            # After a force-unlock the lease is gone (or someone else's): nothing of ours to clear.
            with contextlib.suppress(Exception):
                self._lock_blob.set_blob_metadata({}, lease=lease)
                lease.release()

    def lock_info(self) -> LockInfo | None:
        from hpclz.azure.storage import ResourceNotFoundError

        try:
            with _storage_errors(f"read the lock of state {self.location}"):
                props = self._lock_blob.get_blob_properties()
        except ResourceNotFoundError:
            return None
        if props.lease.state != "leased":
            return None
        return _decode(props.metadata.get(LOCK_META_KEY)) or LockInfo(who="unknown", operation="unknown", pid=0)

    def force_unlock(self) -> LockInfo | None:
        from hpclz.azure.storage import break_lease

        holder = self.lock_info()
        if holder is None:
            return None
        with _storage_errors(f"break the lock of state {self.location}"):
            break_lease(self._lock_blob)
        return holder


def _encode(info: LockInfo) -> str:
    return base64.b64encode(info.model_dump_json().encode()).decode("ascii")


def _decode(value: str | None) -> LockInfo | None:
    if not value:
        return None
    try:
        return LockInfo.model_validate_json(base64.b64decode(value))
    except (ValueError, ValidationError):
        return None


def _metadata(doc: StateDocument) -> dict[str, str]:
    """What `_entry` reads back to list a stored version without downloading it."""
    return {"serial": str(doc.serial), "lineage": doc.lineage}


def _newest_first(entries: Iterable[HistoryEntry | None]) -> list[HistoryEntry]:
    return sorted((e for e in entries if e is not None), key=lambda e: e.serial, reverse=True)


def _entry(item: Any, location: str) -> HistoryEntry | None:
    meta = item.metadata or {}
    if not meta.get("serial", "").isdigit():
        return None
    return HistoryEntry(
        serial=int(meta["serial"]),
        lineage=meta.get("lineage", ""),
        updated_at=item.last_modified,
        hpclz_version="",
        location=location,
    )


@contextlib.contextmanager
def _storage_errors(action: str) -> Iterator[None]:
    """Storage failures become one StateStorageError line; not-found, exists and modified pass through."""
    from hpclz.azure.storage import storage_errors

    with storage_errors(action):
        yield
