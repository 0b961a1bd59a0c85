"""Compiled templates kept between runs, so a command compiles each Jinja template once, not on every run.

Compiling hpclz's templates from source took most of a cold `hpclz plan` (about 0.9 s of 1.7 s, python -X
importtime and cProfile on the 2-core development machine). Jinja asks a bytecode cache for a template's code
before compiling it (jinja2.BaseLoader.load: `bcc.get_bucket(...)`, then `bcc.set_bucket(...)` after a compile;
https://jinja.palletsprojects.com/en/stable/api/#bytecode-cache); this one keeps each template's code object in
a file of its own:

- the folder is keyed by what the compiled code depends on besides the template: hpclz's version, Jinja's
  version, the Python implementation (marshal's format and bytecode differ between versions) and the source
  of hpclz.render.engine, which sets the environment options the compiler reads (trim_blocks, finalize, the
  filters); a change to any of them is a new folder, so old code is never run;
- a file is named by Jinja's key for the template (its name and path) and starts with the SHA-1 of the
  template's source, as Jinja's own cache checks (jinja2.bccache.Bucket.load_bytecode), and the SHA-256 of the
  code that follows: an edited template, or a truncated or damaged file, is a miss;
- a file is written to a temporary name and renamed over the old one (os.replace is atomic on POSIX), so a
  concurrent run reads a whole file or none;
- anything that goes wrong (no home folder, a read-only or full disk, a folder someone else owns or others
  may write, a damaged file) is a miss and the template is compiled as before: the cache can only save time,
  never change the output or fail a command.

Where: $HPCLZ_CACHE_DIR/jinja, else $XDG_CACHE_HOME/hpclz/jinja, else ~/.cache/hpclz/jinja (the XDG base
directory default, as the gate cache). HPCLZ_TEMPLATE_CACHE=0 turns it off.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
import types
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket, BytecodeCache

from hpclz import __version__

CACHE_DIR_ENV = "HPCLZ_CACHE_DIR"
CACHE_SWITCH_ENV = "HPCLZ_TEMPLATE_CACHE"
_OFF = ("0", "false", "off", "no")


def cache_root() -> Path:
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV]) / "jinja"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hpclz" / "jinja"


def fingerprint() -> str:
    """What the compiled code depends on besides the template itself (see the module docstring)."""
    engine = Path(__file__).with_name("engine.py").read_bytes()
    parts = [__version__, jinja2.__version__, sys.implementation.cache_tag or sys.version]
    digest = hashlib.sha256("\0".join(parts).encode())
    digest.update(engine)
    return digest.hexdigest()[:24]


def _private_folder(path: Path) -> bool:
    """Make the folder if needed; use it only if this user owns it and nobody else may write to it, since what
    it holds is run as code."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = path.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


class TemplateCodeCache(BytecodeCache):
    """A jinja2 BytecodeCache over one private folder; every failure is a miss (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _file(self, bucket: Bucket) -> Path:
        return self.folder / f"{bucket.key}.code"

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            data = self._file(bucket).read_bytes()
        except OSError:
            return
        checksum, digest, code = data[:40], data[40:104], data[104:]
        if checksum != bucket.checksum.encode() or digest != hashlib.sha256(code).hexdigest().encode():
            return
        try:
            loaded = marshal.loads(code)
        except (EOFError, ValueError, TypeError):
            return
        if isinstance(loaded, types.CodeType):
            bucket.code = loaded

    def dump_bytecode(self, bucket: Bucket) -> None:
        if bucket.code is None:
            return
        code = marshal.dumps(bucket.code)
        data = bucket.checksum.encode() + hashlib.sha256(code).hexdigest().encode() + code
        target = self._file(bucket)
        try:
            with tempfile.NamedTemporaryFile(dir=self.folder, prefix=target.name, suffix=".tmp", delete=False) as f:
                temporary = Path(f.name)
                f.write(data)
        except OSError:
            return
        try:
            temporary.replace(target)
        except OSError:
            temporary.unlink(missing_ok=True)

    def clear(self) -> None:
        for entry in self.folder.glob("*.code"):
            entry.unlink(missing_ok=True)


def template_code_cache() -> TemplateCodeCache | None:
    """The cache for this hpclz, Jinja and Python, or None where it is switched off or its folder is unusable."""
    if os.environ.get(CACHE_SWITCH_ENV, "1").strip().lower() in _OFF:
        return None
    try:
        folder = cache_root() / fingerprint()
    except (OSError, RuntimeError):  # Path.home() raises RuntimeError where no home folder can be found
        return None
    return TemplateCodeCache(folder) if _private_folder(folder) else None
