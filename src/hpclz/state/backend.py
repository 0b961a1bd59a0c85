"""The state backend contract: what deploy, destroy and plan call, whichever storage holds the state.

Usage (deploy):

    backend = open_backend(config, base_dir=config_file.parent, config_file=str(config_file))
    with backend.lock("deploy"):          # StateLockedError (exit 4) if another run holds it
        doc = backend.read() or new_state(config)
        ...                                 # change doc
        doc = backend.write(doc)            # serial + 1; refused if the stored state moved on

`write` is conditional on the version this backend instance last read (local: serial under a
write mutex; Azure Blob: the ETag, sent as If-Match). A document read elsewhere and written here
is still checked by serial and lineage. Every write scans the serialized document for secrets.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from hpclz.state.errors import StateConflictError, StateStorageError
from hpclz.state.lockinfo import LockInfo
from hpclz.state.model import STATE_SCHEMA_VERSION, StateDocument, now

DEFAULT_KEEP = 20  # previous versions a backend keeps where storage has no versioning of its own


class HistoryEntry(BaseModel):
    """One previous version of the state, newest first in `history()`."""

    serial: int
    lineage: str
    updated_at: datetime
    hpclz_version: str
    location: str  # file path, blob name or blob version id: where `read_version` finds it


@runtime_checkable
class StateBackend(Protocol):
    @property
    def location(self) -> str:
        """Where the state lives, for messages (a path or a blob URL)."""
        ...

    def read(self) -> StateDocument | None:
        """The current state, or None when nothing was ever written. Remembers its version for `write`."""
        ...

    def write(self, doc: StateDocument) -> StateDocument:
        """Store `doc` as the next serial and return what was stored.

        Raises StateConflictError if the stored state has another lineage or moved on since it was
        read, SecretInStateError if the document holds a secret (nothing is written then).
        """
        ...

    def lock(self, operation: str) -> AbstractContextManager[LockInfo]:
        """Hold the state lock for `operation`; StateLockedError at once if someone else holds it."""
        ...

    def lock_info(self) -> LockInfo | None:
        """Who holds the lock now, or None."""
        ...

    def force_unlock(self) -> LockInfo | None:
        """Break the lock whoever holds it; returns who held it (None if nobody did)."""
        ...

    def history(self) -> list[HistoryEntry]:
        """Previous versions kept, newest first."""
        ...

    def read_version(self, serial: int) -> StateDocument | None:
        """A previous version by serial, or None if it is not kept."""
        ...


def next_version(stored: StateDocument | None, doc: StateDocument, where: str) -> StateDocument:
    """Check `doc` may replace `stored` and return the document to store (serial bumped, stamped)."""
    if stored is not None:
        if stored.lineage != doc.lineage:
            raise StateConflictError(
                f"state {where} has lineage {stored.lineage}, the document to write has {doc.lineage}: "
                "it belongs to another landing zone or was re-created; refusing to overwrite it"
            )
        if stored.serial != doc.serial:
            raise StateConflictError(
                f"state {where} is at serial {stored.serial} but this write is based on serial {doc.serial}: "
                "another run changed it since it was read; re-run to start from the current state"
            )
    base = stored.serial if stored is not None else doc.serial
    from hpclz import __version__

    return doc.model_copy(update={"serial": base + 1, "updated_at": now(), "hpclz_version": __version__}, deep=True)


def check_owner(doc: StateDocument, zone: str, where: str) -> None:
    """A state file copied from another landing zone (or environment) must not be planned or destroyed
    against this one: its resources are someone else's."""
    owner = f"{doc.landing_zone}-{doc.environment}"
    if owner != zone:
        raise StateStorageError(
            f"state {where} belongs to landing zone {owner} (lineage {doc.lineage}), not {zone}; "
            "refusing to use another landing zone's state"
        )


def parse_state(raw: bytes, where: str) -> StateDocument:
    """Parse stored state; refuse one written by a newer hpclz rather than drop fields it does not know."""
    import json

    from pydantic import ValidationError

    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise StateStorageError(f"state {where} is not valid JSON: {exc}") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(version, int) and version > STATE_SCHEMA_VERSION:
        raise StateStorageError(
            f"state {where} has schema version {version}, newer than this hpclz understands "
            f"({STATE_SCHEMA_VERSION}); upgrade hpclz"
        )
    try:
        return StateDocument.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "<document>"
        raise StateStorageError(f"state {where} is not a valid hpclz state document: {field}: {first['msg']}") from None
