"""`hpclz init`: a starter config copied from a sector preset, with the schema its editor line points at; with
answers (the questions `hpclz init` asks without --preset, or --name/--region), the preset is edited in place
(comments kept) and the result must validate before anything is written."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hpclz.errors import ExitCode, HpclzError
from hpclz.outfile import write_out_file
from hpclz.package_data import preset_names, preset_path

SCHEMA_FILE = "hpclz.schema.json"
# The presets point at docs/ of the checkout; a config written elsewhere must point at a file that exists there.
_SCHEMA_LINE = re.compile(r"^# yaml-language-server: \$schema=.*$", re.M)


@dataclass(frozen=True)
class Answers:
    """What a person changes in the preset; None or empty: the preset's own value."""

    name: str | None = None
    region: str | None = None
    partitions: tuple[tuple[str, str, int], ...] = ()  # (partition, VM size, max nodes); max 0 drops it
    lustre_tib: int | None = None


@dataclass(frozen=True)
class InitOptions:
    preset: str
    out: Path
    force: bool = False  # overwrite a config that exists
    answers: Answers | None = None


@dataclass(frozen=True)
class PresetFacts:
    """What the questions offer as defaults."""

    name: str
    region: str
    partitions: tuple[tuple[str, str, int], ...]
    lustre_tib: int | None


def preset_facts(preset: str) -> PresetFacts:
    from hpclz.config.loader import load_config
    from hpclz.config.storage import NewLustre

    _known(preset)
    config = load_config(preset_path(preset)).config
    lustre = config.storage.lustre
    return PresetFacts(
        name=config.metadata.name,
        region=config.metadata.location,
        partitions=tuple((p.name, p.vm_size, p.max_nodes) for p in config.compute.partitions),
        lustre_tib=lustre.capacity_tib if isinstance(lustre, NewLustre) else None,
    )


def _known(preset: str) -> None:
    if preset not in preset_names():
        raise HpclzError(
            f"unknown preset '{preset}'; choose one of: {', '.join(preset_names())}", exit_code=ExitCode.USAGE
        )


def _answered(text: str, answers: Answers, out: Path) -> str:
    """The preset's YAML with the answers in it (ruamel round trip: comments stay); it must validate."""
    import io

    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 120
    data = yaml.load(text)
    if answers.name:
        data["metadata"]["name"] = answers.name
    if answers.region:
        data["metadata"]["location"] = answers.region
    sizes = {name: (size, nodes) for name, size, nodes in answers.partitions}
    kept = []
    for partition in data["compute"]["partitions"]:
        size, nodes = sizes.get(partition["name"], (partition["vm_size"], partition["max_nodes"]))
        if nodes > 0:
            partition["vm_size"], partition["max_nodes"] = size, nodes
            kept.append(partition)
    if not kept:
        raise HpclzError("every partition has 0 nodes: keep at least one; nothing written", exit_code=ExitCode.USAGE)
    data["compute"]["partitions"][:] = kept
    if answers.lustre_tib is not None:
        data["storage"]["lustre"]["capacity_tib"] = answers.lustre_tib
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    _must_validate(buffer.getvalue(), out)
    return buffer.getvalue()


def _must_validate(text: str, out: Path) -> None:
    from hpclz.config.loader import load_config_text
    from hpclz.services.validate import check_config
    from hpclz.severity import Severity

    errors = [f for f in check_config(load_config_text(text, str(out)))[0] if f.severity is Severity.ERROR]
    if errors:
        first = errors[0]
        where = f"{out}:{first.line}: " if first.line else f"{out}: "
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise HpclzError(
            f"{where}{first.rule_id}: {first.message}{more}; nothing written: answer again, or start from --preset",
            exit_code=ExitCode.CONFIG_INVALID,
        )


@dataclass(frozen=True)
class Written:
    config: Path
    schema: Path


def write_preset(opts: InitOptions) -> Written:
    preset, out, force = opts.preset, opts.out, opts.force
    _known(preset)
    if out.is_symlink():
        raise HpclzError(f"{out}: --out is a symbolic link; name the file itself", exit_code=ExitCode.USAGE)
    if out.is_dir():
        raise HpclzError(f"{out}: --out is a folder; name a file", exit_code=ExitCode.USAGE)
    if out.exists() and not force:
        raise HpclzError(f"{out} already exists; pass --force to overwrite it", exit_code=ExitCode.USAGE)
    from hpclz.config.schema import config_schema_json

    schema = out.parent / SCHEMA_FILE
    text = preset_path(preset).read_text(encoding="utf-8")
    line = f"# yaml-language-server: $schema=./{SCHEMA_FILE}"
    text = _SCHEMA_LINE.sub(line, text, count=1) if _SCHEMA_LINE.search(text) else f"{line}\n{text}"
    if opts.answers is not None:
        text = _answered(text, opts.answers, out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HpclzError(f"{out}: cannot write: {exc.strerror or exc}", exit_code=ExitCode.USAGE) from None
    # Always rewritten: it describes the installed hpclz, which is what will read the config. Both files are new
    # files renamed in (hpclz.outfile): a link planted at either name is replaced, never written through.
    write_out_file(schema, config_schema_json() + "\n", "schema")
    write_out_file(out, text, "config")
    return Written(config=out, schema=schema)
