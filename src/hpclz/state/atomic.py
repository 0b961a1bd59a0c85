"""Crash-safe private files: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700
TEMP_PREFIX = ".tmp-"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` and its missing parents 0700 (state names every resource of a landing zone). A folder that
    already exists is the user's and keeps its mode: hpclz changes the mode only of folders it created. A link in
    the way is refused: state written through it would land wherever it points."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and not probe.is_symlink():
        missing.append(probe)
        probe = probe.parent
    if path.is_symlink():
        raise OSError(errno.ELOOP, "is a symbolic link; hpclz does not write state through links", str(path))
    for folder in reversed(missing):
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
        folder.chmod(DIR_MODE)  # mkdir's mode is filtered by the umask
    return path


def write_atomic(path: Path, data: bytes) -> None:
    """Temp file in the same folder, fsync, rename over `path`, fsync the folder (so the rename survives a crash)."""
    fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=path.parent)  # mkstemp creates it 0600
    temp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        temp.replace(path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
