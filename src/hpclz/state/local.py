"""Local state: files under `<config dir>/<state.path>/<name>-<environment>/`, private to the user.

state.json          the current document
history/<n>.json    previous versions (the last `keep` of them)
state.lock          the flock (held for the whole operation)
lock.json           who holds it (sidecar, so a refused run and `unlock --force` can say)
write.lock          a short mutex around read-check-rename of one write
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout
from pydantic import ValidationError

from hpclz.state.atomic import FILE_MODE, ensure_private_dir, write_atomic
from hpclz.state.backend import DEFAULT_KEEP, HistoryEntry, check_owner, next_version, parse_state
from hpclz.state.errors import StateConflictError, StateLockedError, StateStorageError
from hpclz.state.guard import SecretGuard
from hpclz.state.lockinfo import LockInfo, locked_error_message, unlock_hint
from hpclz.state.model import StateDocument

log = logging.getLogger(__name__)

_UNREAD = object()  # `write` before any `read`: only the document's own serial and lineage are checked
WRITE_MUTEX_TIMEOUT_S = 10.0


class LocalBackend:
    def __init__(
        self,
        state_dir: Path,
        zone: str,
        *,
        guard: SecretGuard,
        keep: int = DEFAULT_KEEP,
        config_file: str | None = None,
    ):
        self.state_dir = state_dir
        self.root = state_dir / zone
        self.guard = guard
        self.keep = keep
        self._config_file = config_file
        self._read_serial: object = _UNREAD
        self._held: LockInfo | None = None
        self.write_timeout_s = WRITE_MUTEX_TIMEOUT_S

    @property
    def location(self) -> str:
        return str(self.state_file)

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def history_dir(self) -> Path:
        return self.root / "history"

    @property
    def _lock_file(self) -> Path:
        return self.root / "state.lock"

    @property
    def _info_file(self) -> Path:
        return self.root / "lock.json"

    def _ensure_dirs(self) -> None:
        try:
            ensure_private_dir(self.state_dir)
            ensure_private_dir(self.root)
        except OSError as exc:  # a read-only or foreign-owned folder: the user's to fix, not a crash
            raise StateStorageError(f"cannot use state folder {self.root}: {exc.strerror or exc}") from None

    def read(self) -> StateDocument | None:
        doc = _load(self.state_file)
        log.info("read state %s: %s", self.location, f"serial {doc.serial}" if doc else "none yet")
        if doc is not None:
            check_owner(doc, self.root.name, self.location)
        self._read_serial = doc.serial if doc else None
        return doc

    def write(self, doc: StateDocument) -> StateDocument:
        self._ensure_dirs()
        mutex = FileLock(str(self.root / "write.lock"), timeout=self.write_timeout_s, mode=FILE_MODE)
        try:
            mutex.acquire()
        except Timeout:
            raise StateStorageError(
                f"cannot write state {self.location}: another write has held it for {self.write_timeout_s:g} s"
            ) from None
        try:
            self._check_still_locked()
            stored = _load(self.state_file)
            self._check_unchanged_since_read(stored)
            new = next_version(stored, doc, self.location)
            text = new.model_dump_json(indent=2) + "\n"
            self.guard.check_text(text, self.location)
            try:
                if stored is not None:
                    self._archive(stored)
                write_atomic(self.state_file, text.encode())
            except OSError as exc:
                raise StateStorageError(f"cannot write state {self.location}: {exc.strerror or exc}") from None
        finally:
            mutex.release()
        self._read_serial = new.serial
        return new

    def _check_still_locked(self) -> None:
        """After `unlock --force` another run may hold the lock: this run must not write any more."""
        if self._held is None:
            return
        recorded = self._recorded_info()
        if recorded is None or recorded.id != self._held.id:
            raise StateLockedError(f"lost the lock on state {self.location} (it was force-unlocked); nothing written")

    def _check_unchanged_since_read(self, stored: StateDocument | None) -> None:
        if self._read_serial is _UNREAD:
            return
        now_serial = stored.serial if stored else None
        if now_serial != self._read_serial:
            raise StateConflictError(
                f"state {self.location} changed since it was read (serial {self._read_serial} -> {now_serial}): "
                "another run wrote it; re-run to start from the current state"
            )

    def _archive(self, stored: StateDocument) -> None:
        ensure_private_dir(self.history_dir)
        target = self.history_dir / f"{stored.serial}.json"
        write_atomic(target, self.state_file.read_bytes())
        for old in self._history_files()[self.keep :]:
            old.unlink(missing_ok=True)

    def _history_files(self) -> list[Path]:
        if not self.history_dir.is_dir():
            return []
        files = [p for p in self.history_dir.glob("*.json") if p.stem.isdigit()]
        return sorted(files, key=lambda p: int(p.stem), reverse=True)

    def history(self) -> list[HistoryEntry]:
        entries = []
        for path in self._history_files():
            doc = _load(path)
            if doc is not None:
                entries.append(
                    HistoryEntry(
                        serial=doc.serial,
                        lineage=doc.lineage,
                        updated_at=doc.updated_at,
                        hpclz_version=doc.hpclz_version,
                        location=str(path),
                    )
                )
        return entries

    def read_version(self, serial: int) -> StateDocument | None:
        return _load(self.history_dir / f"{serial}.json")

    @contextlib.contextmanager
    def lock(self, operation: str) -> Iterator[LockInfo]:
        self._ensure_dirs()
        flock = FileLock(str(self._lock_file), timeout=0, mode=FILE_MODE, thread_local=False)
        try:
            flock.acquire()
        except Timeout:  # an OSError too: caught first
            raise StateLockedError(
                locked_error_message(self.location, self._recorded_info()), hint=unlock_hint(self._config_file)
            ) from None
        except OSError as exc:
            raise StateStorageError(f"cannot lock state {self.location}: {exc.strerror or exc}") from None
        info = LockInfo.for_operation(operation)
        try:
            try:
                write_atomic(self._info_file, info.model_dump_json(indent=2).encode())
            except OSError as exc:  # a full disk or a file-size limit: write_atomic removed its temp file
                raise StateStorageError(
                    f"cannot lock state {self.location}: cannot write {self._info_file.name}: {exc.strerror or exc}; "
                    "nothing was changed"
                ) from None
            self._held = info
            yield info
        finally:
            self._held = None
            recorded = self._recorded_info()
            if recorded is not None and recorded.id == info.id:  # after a force-unlock it may be someone else's
                self._info_file.unlink(missing_ok=True)
            flock.release()

    def lock_info(self) -> LockInfo | None:
        self._check_info_shape()
        return self._holder()

    def _holder(self) -> LockInfo | None:
        if not self._lock_file.exists() or not self._is_held():
            return None
        return self._recorded_info() or LockInfo(who="unknown", operation="unknown", pid=0)

    def _check_info_shape(self) -> None:
        """A lock record nobody could have written (hand-edited, truncated, another tool's) is refused by name
        rather than read as "unknown holder", so a person looks at it before breaking or trusting the lock."""
        try:
            raw = self._info_file.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StateStorageError(f"cannot read lock record {self._info_file}: {exc.strerror or exc}") from None
        try:
            LockInfo.model_validate_json(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "<document>"
            raise StateStorageError(
                f"lock record {self._info_file} is not an hpclz lock record: {field}: {first['msg']}",
                hint=unlock_hint(self._config_file),
            ) from None

    def force_unlock(self) -> LockInfo | None:
        """Remove the lock file and its info: the next run locks a fresh file, whatever the old holder does."""
        holder = self._holder()
        self._lock_file.unlink(missing_ok=True)
        self._info_file.unlink(missing_ok=True)
        return holder

    def _is_held(self) -> bool:
        # Probing takes the flock for an instant; a run starting in that instant is told the state is locked.
        probe = FileLock(str(self._lock_file), timeout=0, mode=FILE_MODE, thread_local=False)
        try:
            probe.acquire()
        except Timeout:
            return True
        probe.release()
        return False

    def _recorded_info(self) -> LockInfo | None:
        try:
            return LockInfo.model_validate_json(self._info_file.read_bytes())
        except (FileNotFoundError, ValidationError):
            return None


def load_document(path: Path) -> StateDocument | None:
    """The document at `path` (None when there is none), checked as every read is."""
    return _load(path)


def _load(path: Path) -> StateDocument | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateStorageError(f"cannot read state {path}: {exc.strerror or exc}") from None
    return parse_state(raw, str(path))
