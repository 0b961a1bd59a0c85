"""`hpclz schema`: the config's JSON Schema (hpclz.config.schema), printed or written to a file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hpclz.config.schema import config_schema_json
from hpclz.outfile import check_out_file, write_out_file


@dataclass(frozen=True)
class SchemaOptions:
    out: Path
    force: bool = False  # overwrite a file that exists


def write_config_schema(opts: SchemaOptions) -> Path:
    target = check_out_file(opts.out, force=opts.force)
    write_out_file(target, config_schema_json() + "\n", "schema")
    return target
