"""Where readings come from: the live node (commands under a timeout, /proc, /sys) or captured fixtures.

Standard library only: this runs on GPU nodes that may have nothing but python3.

Fixture lookup is layered so one shared tree can give each simulated node its own readings:
  1. DIR/<node>/NAME   (node = SLURMD_NODENAME, else the hostname)
  2. DIR/NAME
  A folder holding a file `fixtures.base` (a path relative to that folder) is followed, right after
  itself, by the folder it names, recursively: a faulty variant holds only the files that differ.
A zero-byte fixture means "the tool is not installed". NAME.rc next to a fixture sets the simulated
exit status: an integer, or the word `timeout`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

BASE_POINTER = "fixtures.base"
DEFAULT_TIMEOUT_S = 20.0
SHELL_SIGNAL_BASE = 128
MAX_SIGNAL = 64  # signal(7): Linux numbers its signals 1-64
INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Output:
    """What one probe read: the text, the exit status, or why there is none."""

    text: str | None
    rc: int | None = 0
    error: str | None = None
    origin: str = ""

    @property
    def ok(self) -> bool:
        return self.text is not None and self.rc == 0 and self.error is None

    @property
    def signal(self) -> int | None:
        """The signal that killed the tool: Python reports it as a negative status, a shell (and a fixture's .rc,
        captured from one) as 128 + the signal (bash(1), EXIT STATUS)."""
        if self.rc is None or self.rc == 0:
            return None
        if self.rc < 0:
            return -self.rc
        return self.rc - SHELL_SIGNAL_BASE if SHELL_SIGNAL_BASE < self.rc <= SHELL_SIGNAL_BASE + MAX_SIGNAL else None

    @property
    def crashed(self) -> bool:
        """The tool printed something and then died of a signal (a segfault, an abort). What it printed may be good
        readings, but a tool that crashed proves nothing either way about the device: inconclusive."""
        return self.signal is not None and bool((self.text or "").strip())

    @property
    def missing(self) -> bool:
        return self.error is not None and self.error.startswith("not installed")

    def why(self) -> str:
        if self.error:
            return self.error
        if self.crashed:
            lines = len((self.text or "").strip().splitlines())
            return f"{INCONCLUSIVE}: {self.origin} crashed (signal {self.signal}) after printing {lines} lines"
        if self.rc not in (0, None):
            return f"exit status {self.rc}"
        return "no output"


def node_name() -> str:
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


class Source:
    """Reads a named probe either from fixtures or from the live system."""

    def __init__(self, fixtures: Path | None = None, node: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.node = node or node_name()
        self.timeout_s = timeout_s
        self.fixtures = fixtures
        self.chain = _chain(fixtures, self.node) if fixtures is not None else []

    @property
    def simulated(self) -> bool:
        return self.fixtures is not None

    def find(self, name: str) -> Path | None:
        for folder in self.chain:
            candidate = folder / name
            if candidate.exists():
                return candidate
        return None

    def command(
        self, name: str, argv: list[str], timeout_s: float | None = None, env: dict[str, str] | None = None
    ) -> Output:
        """Run argv (or read fixture NAME instead) with a hard timeout; `env` adds to the inherited environment."""
        if self.simulated:
            return self._fixture(name)
        exe = shutil.which(argv[0])
        if exe is None:
            return Output(None, None, f"not installed: {argv[0]} not on PATH", argv[0])
        limit = timeout_s or self.timeout_s
        try:
            done = subprocess.run(
                [exe, *argv[1:]],
                capture_output=True,
                text=True,
                timeout=limit,
                check=False,
                errors="replace",
                env={**os.environ, **env} if env else None,
            )
        except subprocess.TimeoutExpired:
            return Output(None, None, f"timed out after {limit:g} s: {' '.join(argv)}", argv[0])
        except OSError as exc:
            return Output(None, None, f"could not run {argv[0]}: {exc}", argv[0])
        return Output(done.stdout, done.returncode, None, " ".join(argv))

    def file(self, name: str, live_path: str) -> Output:
        """Read a system file (/proc/...) or fixture NAME instead."""
        if self.simulated:
            return self._fixture(name)
        try:
            return Output(Path(live_path).read_text(errors="replace"), 0, None, live_path)
        except OSError as exc:
            return Output(None, None, f"not installed: cannot read {live_path}: {exc.strerror}", live_path)

    def binary(self, name: str, live_path: str) -> bytes | None:
        """A binary system file (or fixture NAME), None where it is not there or not readable."""
        path = self.find(name) if self.simulated else Path(live_path)
        if path is None:
            return None
        try:
            return path.read_bytes() or None
        except OSError:
            return None

    def root(self, live_root: str = "/") -> Path | None:
        """The folder that plays `/` for sysfs/dev globbing: the first fixture folder holding `sys/`, or /."""
        if not self.simulated:
            return Path(live_root)
        for folder in self.chain:
            if (folder / "sys").is_dir():
                return folder
        return None

    def _fixture(self, name: str) -> Output:
        path = self.find(name)
        status = self.find(name + ".rc")
        # An empty fixture is a tool that is not there, unless its exit status was captured too: then the tool ran
        # and printed nothing, as `nvidia-smi nvlink -s` does on a GPU without NVLink (tests/fixtures/gpu/h100).
        if path is None or (path.stat().st_size == 0 and status is None):
            return Output(None, None, f"not installed: no fixture {name}", str(path or name))
        rc = 0
        if status is not None:
            word = status.read_text().strip()
            if word == "timeout":
                return Output(None, None, f"timed out (simulated by {status})", str(path))
            rc = int(word)
        return Output(path.read_text(errors="replace"), rc, None, str(path))


def _chain(fixtures: Path, node: str) -> list[Path]:
    if not fixtures.is_dir():
        raise FileNotFoundError(f"fixtures folder {fixtures} does not exist")
    seen: list[Path] = []
    pending = [fixtures / node, fixtures] if (fixtures / node).is_dir() else [fixtures]
    while pending:
        folder = pending.pop(0).resolve()
        if folder in seen or not folder.is_dir():
            continue
        seen.append(folder)
        pointer = folder / BASE_POINTER
        if pointer.is_file():
            pending.insert(0, folder / pointer.read_text().strip())
    return seen
