"""Where a command may write its `--out` file: never over an input, over another file only with --force.

`hpclz plan lz.yaml --out lz.yaml` silently replaced the config with a saved plan; a directory or an
unwritable folder as `--out` escaped as an internal error. Every writer checks here first.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from hpclz.errors import ExitCode, HpclzError


def check_out_file(out: str | Path, *, inputs: Iterable[str | Path] = (), force: bool = False) -> Path:
    """Refuse an `--out` that would overwrite an input, a folder, or an existing file without --force."""
    try:
        return _checked(Path(out), inputs, force)
    except OSError as exc:  # a name the file system refuses (too long, a loop of links): one line, not a traceback
        raise HpclzError(f"{out}: --out cannot be used: {exc.strerror or exc}", exit_code=ExitCode.USAGE) from None


def _checked(target: Path, inputs: Iterable[str | Path], force: bool) -> Path:
    out = target
    for source in inputs:
        if _same_file(target, Path(source)):
            raise HpclzError(
                f"{out}: --out names an input file of this command; refusing to overwrite it", exit_code=ExitCode.USAGE
            )
    if target.is_symlink():
        # A link planted where the file goes would send the write wherever it points.
        raise HpclzError(f"{out}: --out is a symbolic link; name the file itself", exit_code=ExitCode.USAGE)
    if target.is_dir():
        raise HpclzError(f"{out}: --out is a folder; name a file", exit_code=ExitCode.USAGE)
    if target.exists() and not force:
        raise HpclzError(f"{out} already exists; pass --force to overwrite it", exit_code=ExitCode.USAGE)
    if target.exists() and not target.is_file():
        raise HpclzError(f"{out}: --out exists and is not a regular file", exit_code=ExitCode.USAGE)
    folder = target.parent if str(target.parent) else Path()
    if not folder.is_dir():
        raise HpclzError(f"{out}: folder {folder} does not exist", exit_code=ExitCode.USAGE)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise HpclzError(f"{out}: cannot write in folder {folder} (permission denied)", exit_code=ExitCode.USAGE)
    return target


def write_out_file(out: Path, text: str, what: str, mode: int = 0o644) -> None:
    """Write through a new temporary file beside the target (created exclusively, so no planted link is followed)
    and rename it over the target (a rename replaces a link at the target, never writes through it): a failed
    write never leaves half a file. `mode`: 0600 for what only its owner should read (a saved plan)."""
    temp: Path | None = None
    try:
        fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent if str(out.parent) else ".")
        temp = Path(name)
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        temp.replace(out)
    except (OSError, ValueError) as exc:
        if temp is not None:
            temp.unlink(missing_ok=True)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise HpclzError(f"{out}: cannot write the {what}: {reason}", exit_code=ExitCode.USAGE) from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return a.resolve() == b.resolve()
