"""This checkout's own hpclz wheel, built as `hpclz deploy` builds it (hpclz.deploy.wheel: pip wheel, no build
isolation), for the tests that install it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def build_wheel(out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = out.glob("hpclz-*-py3-none-any.whl")
    return wheel
