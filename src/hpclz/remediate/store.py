"""Where the remediation state lives: a JSON document replaced atomically, and a JSON-lines event log.

Crash safety: the state file is written to a temporary file, flushed to disk and renamed over the old one
(rename(2) is atomic within a file system), so a process killed at any instant leaves either the old or the
new document, never half of one. Each event is appended and flushed before the state that follows it is saved,
so the log never misses a transition the state shows (a crash in between repeats a line, never drops one).
An exclusive flock on `lock` keeps two remediators from acting on the same state at once.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from hpclz.errors import ExitCode, HpclzError
from hpclz.remediate.model import Event, RemediationState


class Store:
    def __init__(self, folder: Path):
        self.folder = folder

    @property
    def state_file(self) -> Path:
        return self.folder / "state.json"

    @property
    def events_file(self) -> Path:
        return self.folder / "events.jsonl"

    @contextmanager
    def locked(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with (self.folder / "lock").open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise HpclzError(
                    f"{self.folder}: another hpclz remediation holds its lock", exit_code=ExitCode.USAGE
                ) from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def load(self) -> RemediationState:
        if not self.state_file.exists():
            return RemediationState()
        try:
            return RemediationState.model_validate_json(self.state_file.read_text())
        except (ValidationError, ValueError) as exc:
            first = str(exc).splitlines()[0]
            raise HpclzError(
                f"{self.state_file}: not a remediation state ({first})", exit_code=ExitCode.USAGE
            ) from None

    def save(self, state: RemediationState) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        with tmp.open("w") as handle:
            handle.write(state.model_dump_json(indent=1))
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(self.state_file)
        dir_fd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def record(self, event: Event) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.events_file.open("a") as handle:
            handle.write(event.model_dump_json() + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def events(self) -> list[Event]:
        if not self.events_file.exists():
            return []
        lines = self.events_file.read_text().splitlines()
        return [Event.model_validate(json.loads(line)) for line in lines if line.strip()]
