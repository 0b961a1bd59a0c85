"""Pack the node agent into one file: `python -m hpclz.verify.bundle agent.pyz`, then `python3 agent.pyz --nhc`.

The bundle is a zipapp of the agent's standard-library modules and thresholds.json, so a node needs only
python3 (3.11+): copy the file, no venv, no pip. The pydantic-side rule wrappers are left out on purpose.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # src/hpclz
MODULES = [
    "__init__.py",
    "errors.py",
    "verify/__init__.py",
    "verify/agent.py",
    "verify/nccl.py",
    "verify/perf.py",
    "verify/thresholds.py",
    "verify/thresholds.json",
    "verify/topology/*.xml",
    "verify/probes/*.py",
    "verify/checks/__init__.py",
    "verify/checks/core.py",
    "verify/checks/gpu.py",
    "verify/checks/host.py",
    "verify/checks/perf.py",
]
MAIN = "import sys\n\nfrom hpclz.verify.agent import main\n\nsys.exit(main())\n"


def build(target: Path) -> Path:
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("__main__.py", MAIN)
        for pattern in MODULES:
            for path in sorted(PACKAGE.glob(pattern)):
                archive.write(path, f"hpclz/{path.relative_to(PACKAGE).as_posix()}")
    # A zipapp may start with a shebang line; zipfile readers find the archive from its end, so prepend it.
    data = target.read_bytes()
    target.write_bytes(b"#!/usr/bin/env python3\n" + data)
    target.chmod(0o755)
    return target


if __name__ == "__main__":
    out = build(Path(sys.argv[1] if len(sys.argv) > 1 else "hpclz-verify-agent.pyz"))
    print(f"wrote {out}")
