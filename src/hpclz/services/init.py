"""`hpclz init`: a starter config copied from a sector preset, with the schema its editor line points at."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hpclz.errors import ExitCode, HpclzError
from hpclz.package_data import preset_names, preset_path

SCHEMA_FILE = "hpclz.schema.json"
# The presets point at docs/ of the checkout; a config written elsewhere must point at a file that exists there.
_SCHEMA_LINE = re.compile(r"^# yaml-language-server: \$schema=.*$", re.M)


@dataclass(frozen=True)
class InitOptions:
    preset: str
    out: Path
    force: bool = False  # overwrite a config that exists


@dataclass(frozen=True)
class Written:
    config: Path
    schema: Path


def write_preset(opts: InitOptions) -> Written:
    preset, out, force = opts.preset, opts.out, opts.force
    if preset not in preset_names():
        raise HpclzError(
            f"unknown preset '{preset}'; choose one of: {', '.join(preset_names())}", exit_code=ExitCode.USAGE
        )
    if out.is_dir():
        raise HpclzError(f"{out}: --out is a folder; name a file", exit_code=ExitCode.USAGE)
    if out.exists() and not force:
        raise HpclzError(f"{out} already exists; pass --force to overwrite it", exit_code=ExitCode.USAGE)
    from hpclz.config.schema import config_schema_json

    schema = out.parent / SCHEMA_FILE
    text = preset_path(preset).read_text(encoding="utf-8")
    line = f"# yaml-language-server: $schema=./{SCHEMA_FILE}"
    text = _SCHEMA_LINE.sub(line, text, count=1) if _SCHEMA_LINE.search(text) else f"{line}\n{text}"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        # Always rewritten: it describes the installed hpclz, which is what will read the config.
        schema.write_text(config_schema_json() + "\n", encoding="utf-8")
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise HpclzError(f"{out}: cannot write: {exc.strerror or exc}", exit_code=ExitCode.USAGE) from None
    return Written(config=out, schema=schema)
