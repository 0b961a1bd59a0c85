"""Golden files: each preset's rendered output, committed under tests/golden/<preset>/.

`scripts/regen-golden` rewrites them; tests compare byte for byte and print a unified diff on mismatch.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

from hpclz.config import load_config
from hpclz.render.build import build_plan
from hpclz.render.model import DeploymentPlan
from hpclz.render.writer import output_files, write_plan

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
PRESETS = sorted((REPO / "configs").glob("*.yaml"))


def _plan(preset: Path) -> DeploymentPlan:
    return build_plan(load_config(preset).config)


def rendered(preset: Path) -> dict[str, str]:
    return output_files(_plan(preset))


def committed(preset: Path) -> dict[str, str]:
    root = GOLDEN / preset.stem
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*")) if p.is_file()
    }


def diff(expected: dict[str, str], actual: dict[str, str], limit: int = 200, width: int = 160) -> str:
    """A readable unified diff per differing file, cut at `limit` lines of at most `width` characters.

    Long lines (base64 customData, a cloud-config's embedded files) are cut: the artifacts/ copies of the
    same content diff line by line, so the readable change is always shown there.
    """
    lines: list[str] = []
    for name in sorted(set(expected) | set(actual)):
        old, new = expected.get(name), actual.get(name)
        if old == new:
            continue
        lines += difflib.unified_diff(
            (old or "").splitlines(),
            (new or "").splitlines(),
            fromfile=f"golden/{name}" if old is not None else "/dev/null",
            tofile=f"rendered/{name}" if new is not None else "/dev/null",
            lineterm="",
            n=2,
        )
    lines = [line if len(line) <= width else f"{line[:width]} ... ({len(line) - width} more)" for line in lines]
    if len(lines) > limit:
        lines = [*lines[:limit], f"... {len(lines) - limit} more diff lines"]
    return "\n".join(lines)


def regenerate() -> list[Path]:
    written = []
    for preset in PRESETS:
        root = GOLDEN / preset.stem
        shutil.rmtree(root, ignore_errors=True)
        written += write_plan(_plan(preset), root)
    return written
