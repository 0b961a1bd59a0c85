"""The hpclz wheel the scheduler installs: this hpclz's own, found or built here, named by its SHA-256.

The scheduler never installs hpclz from a package index: `hpclz deploy` uploads the wheel to
CycleCloud's locker and passes "<sha256>/<file name>" to the compute deployment, and the node refuses a file whose
digest differs. Where the wheel comes from, first found: HPCLZ_WHEEL (a path); a build of the source checkout this
hpclz runs from (an editable install; hatchling builds reproducibly: the same tree gives the same bytes); else, for an
installed hpclz, which keeps no wheel of itself, the wheel rebuilt from its installed files as their RECORD lists and
hashes them (wheel_repack: a changed install is refused, and the same install gives the same bytes). Either way an
unchanged hpclz redeploys nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from hpclz.deploy.wheel_repack import repack_installed
from hpclz.errors import ExitCode, HpclzError

WHEEL_ENV = "HPCLZ_WHEEL"
# A pure-Python hpclz wheel (PEP 427 file name); the node's hpclz-cluster-sync accepts only this shape.
WHEEL_NAME = re.compile(r"^hpclz-[A-Za-z0-9_.]+-py3-none-any\.whl$")
BUILD_TIMEOUT_S = 300


@dataclass(frozen=True)
class Wheel:
    path: Path
    sha256: str

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def blob(self) -> str:
        """Its name in the locker's wheel container: by content, so a blob never changes under a node."""
        return f"{self.sha256}/{self.name}"


def hpclz_wheel() -> Wheel:
    configured = os.environ.get(WHEEL_ENV)
    path = Path(configured) if configured else _built_here()
    if not WHEEL_NAME.match(path.name) or not path.is_file():
        raise HpclzError(
            f"{WHEEL_ENV}={path}: not an hpclz wheel file (hpclz-<version>-py3-none-any.whl)",
            exit_code=ExitCode.USAGE,
        )
    return Wheel(path, _sha256(path))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _checkout() -> Path | None:
    """The source tree this hpclz runs from (an editable install), if any."""
    root = Path(__file__).resolve().parents[3]
    project = root / "pyproject.toml"
    if project.is_file() and re.search(r'(?m)^name = "hpclz"$', project.read_text(encoding="utf-8")):
        return root
    return None


@cache
def _built_here() -> Path:
    root = _checkout()
    out = Path(tempfile.mkdtemp(prefix="hpclz-wheel-"))
    if root is None:
        return repack_installed(out)
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        str(root),
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(out),
    ]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()
        raise HpclzError(
            f"could not build the hpclz wheel from {root} ({detail[-1] if detail else exc}); "
            f"install hatchling or set {WHEEL_ENV}",
            exit_code=ExitCode.USAGE,
        ) from None
    built = sorted(out.glob("hpclz-*.whl"))
    if len(built) != 1:
        raise HpclzError(f"building the hpclz wheel in {out} gave {len(built)} wheels", exit_code=ExitCode.USAGE)
    return built[0]
