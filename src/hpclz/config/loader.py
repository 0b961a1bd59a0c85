"""Load a YAML config into the typed model; every problem becomes a located one-line error."""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.reader import ReaderError

from hpclz.config.base import models_in
from hpclz.config.bounds import MAX_CONFIG_BYTES, BoundsExceeded, ReadRefused, guarded_parser, read_bounded
from hpclz.config.patterns import plain
from hpclz.config.root import LandingZoneConfig
from hpclz.config.scan import string_problems
from hpclz.config.source_map import Path, SourceMap, build, display_path
from hpclz.errors import ConfigError, ConfigProblem, ExitCode, HpclzError

log = logging.getLogger(__name__)


@dataclass
class LoadedConfig:
    config: LandingZoneConfig
    source: SourceMap

    @property
    def file(self) -> str:
        return self.source.file


def load_config(path: str | FsPath) -> LoadedConfig:
    file = str(path)
    log.info("reading config %s", file)
    try:
        text = read_bounded(path)
    except FileNotFoundError:
        raise HpclzError(f"{file}: config file not found", exit_code=ExitCode.CONFIG_INVALID) from None
    except ReadRefused as exc:
        raise HpclzError(f"{file}: {exc}", exit_code=ExitCode.CONFIG_INVALID) from None
    except UnicodeDecodeError as exc:
        raise HpclzError(
            f"{file}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start : exc.start + 1]!r})",
            exit_code=ExitCode.CONFIG_INVALID,
        ) from None
    except OSError as exc:
        raise HpclzError(
            f"{file}: cannot read config: {exc.strerror or exc}", exit_code=ExitCode.CONFIG_INVALID
        ) from None
    return load_config_text(text, file)


def load_config_text(text: str, file: str = "<config>") -> LoadedConfig:
    source = build(file, _parse(text, file))
    document = source.data
    if document is None:
        raise ConfigError(
            [ConfigProblem(file, 1, 1, "", "the file is empty; expected a mapping (see `hpclz init`)", "empty")]
        )
    if not isinstance(document, dict):
        raise ConfigError(
            [ConfigProblem(file, 1, 1, "", "expected a mapping of sections at the top level", "not_a_mapping")]
        )
    problems = string_problems(source)
    if problems:
        raise ConfigError(problems)
    try:
        config = LandingZoneConfig.model_validate(source.data)
    except ValidationError as exc:
        raise ConfigError([_problem(error, source) for error in _without_typo_echoes(exc.errors())]) from None
    return LoadedConfig(config=config, source=source)


def _parse(text: str, file: str) -> Any:
    """The YAML document, after its events have been checked against the bounds in hpclz.config.bounds."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError([ConfigProblem(file, 1, 1, "", f"larger than {MAX_CONFIG_BYTES} bytes", "too_large")])
    yaml = YAML(typ="rt")
    yaml.Parser = guarded_parser(yaml.Parser)  # the limits are checked as the text is read (bounds.guarded_parser)
    try:
        return yaml.load(text)
    except BoundsExceeded as exc:
        breach = exc.breach
        raise ConfigError([ConfigProblem(file, breach.line, breach.column, "", breach.message, breach.code)]) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        raise ConfigError([ConfigProblem(file, line, col, "", f"invalid YAML: {problem}", "yaml_syntax")]) from None
    except ReaderError as exc:  # a character YAML does not allow (NUL, other C0 controls)
        line, col = _position(text, exc.position)
        problem = f"invalid YAML: character U+{_codepoint(exc.character):04X} is not allowed in a YAML file"
        raise ConfigError([ConfigProblem(file, line, col, "", problem, "yaml_character")]) from None
    except YAMLError as exc:
        raise ConfigError([ConfigProblem(file, 1, 1, "", f"invalid YAML: {exc}", "yaml_syntax")]) from None


def _position(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _without_typo_echoes(errors: list[Any]) -> list[Any]:
    """A misspelt required key yields 'missing' and 'unknown'; keep only the unknown one, which suggests the fix."""
    misspelt = set()
    for error in errors:
        if error["type"] == "extra_forbidden":
            parent = tuple(error["loc"][:-1])
            close = _closest_field(str(error["loc"][-1]), _model_at(LandingZoneConfig, parent))
            if close:
                misspelt.add((*parent, close))
    return [e for e in errors if not (e["type"] == "missing" and tuple(e["loc"]) in misspelt)]


SHOWN_CHARS = 80


def shown(value: Any) -> str:
    """A rejected value as the message quotes it: whole when short, else its start and its length (a 900 KB value
    echoed whole buries the one line that says what is wrong)."""
    text = repr(value)
    if len(text) <= SHOWN_CHARS:
        return text
    size = len(value) if isinstance(value, str | bytes) else len(text)
    return f"{text[: SHOWN_CHARS - 20]}... ({size} characters)"


def _problem(error: Any, source: SourceMap) -> ConfigProblem:
    loc = tuple(error["loc"])
    data_path = _data_path(loc, source.data)
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        message = f"unknown key '{key}'{_suggestion(key, loc[:-1])}"
    elif kind == "union_tag_invalid":
        ctx = error.get("ctx", {})
        field = str(ctx.get("discriminator", "mode")).strip("'")
        node = source.value_at(data_path)
        if isinstance(node, dict) and field in node:
            data_path = (*data_path, field)
        message = f"'{ctx.get('tag')}' is not a valid {field}; expected one of {ctx.get('expected_tags')}"
    elif kind == "missing":
        message = f"required key '{loc[-1]}' is missing"
    elif kind == "string_pattern_mismatch":
        message = f"{plain(str(error.get('ctx', {}).get('pattern', '')))} (got {shown(error['input'])})"
    else:
        message = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if "input" in error and not isinstance(error["input"], dict | list):
            message += f" (got {shown(error['input'])})"
    position = source.locate(data_path)
    return ConfigProblem(
        source.file, position.line, position.column, display_path(data_path, source.data), message, kind
    )


def _data_path(loc: tuple[Any, ...], data: Any) -> Path:
    """Drop the discriminator tags pydantic puts in `loc`; keep what indexes the YAML document."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            path.append(part)
        elif isinstance(node, dict | list):
            continue  # a union tag, or the missing/unknown key itself (appended below)
        else:
            break
    if loc and loc[-1] not in path[-1:] and isinstance(loc[-1], str) and isinstance(node, dict):
        path.append(loc[-1])
    return tuple(path)


def _suggestion(key: str, parent_loc: tuple[Any, ...]) -> str:
    model = _model_at(LandingZoneConfig, parent_loc)
    if model is None:
        return ""
    close = _closest_field(key, model)
    if close:
        return f"; did you mean '{close}'?"
    return f"; allowed keys: {', '.join(model.model_fields)}"


def _closest_field(key: str, model: type[BaseModel] | None) -> str | None:
    close = difflib.get_close_matches(key, list(model.model_fields), n=1) if model else []
    return close[0] if close else None


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """Follow a pydantic error location through the model classes (unions picked by their tag)."""
    current: Any = model
    for part in loc:
        candidates = models_in(current)
        if not candidates:
            return None
        chosen = None
        for cls in candidates:
            if isinstance(part, str) and part in cls.model_fields:
                chosen = cls.model_fields[part].annotation
                break
        if chosen is None:
            tagged = [cls for cls in candidates if isinstance(part, str) and _tag_of(cls) == part]
            if tagged:
                current = tagged[0]
                continue
            if isinstance(part, int):
                continue
            return None
        current = chosen
    models = models_in(current)
    return models[0] if len(models) == 1 else None


def _tag_of(cls: type[BaseModel]) -> str | None:
    for name in ("mode", "backend"):
        field = cls.model_fields.get(name)
        if field is not None and isinstance(field.default, str):
            return field.default
    return None


def _codepoint(character: int | str) -> int:
    return character if isinstance(character, int) else ord(character[:1] or "\0")
