"""`hpclz init`: a starter config copied from a sector preset."""

from __future__ import annotations

from pathlib import Path

from hpclz.errors import ExitCode, HpclzError
from hpclz.package_data import preset_names, preset_path


def write_preset(preset: str, out: Path, *, force: bool = False) -> Path:
    if preset not in preset_names():
        raise HpclzError(
            f"unknown preset '{preset}'; choose one of: {', '.join(preset_names())}", exit_code=ExitCode.USAGE
        )
    if out.exists() and not force:
        raise HpclzError(f"{out} already exists; pass --force to overwrite it", exit_code=ExitCode.USAGE)
    out.write_text(preset_path(preset).read_text(encoding="utf-8"), encoding="utf-8")
    return out
