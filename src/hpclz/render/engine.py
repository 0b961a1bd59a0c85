"""The strict Jinja environment every template renders through.

Values reach a template's output only through an escaping filter (`j` for JSON/YAML, `sh` for shell),
so a quote or newline in a config value can never break the rendered document: `finalize` refuses any
interpolation that did not pass through one. Undefined names are errors (StrictUndefined).
"""

from __future__ import annotations

import json
import re
import shlex
import traceback
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpclz.errors import ExitCode, HpclzError
from hpclz.package_data import templates_dir

if TYPE_CHECKING:
    from jinja2 import Environment


class Safe(str):
    """Text already escaped for the document it lands in."""

    __slots__ = ()


class TemplateRenderError(HpclzError):
    exit_code = ExitCode.FAILED


def to_json(value: Any) -> Safe:
    """JSON for a value; also valid YAML 1.2, so cloud-config templates use it too."""
    return Safe(json.dumps(_plain(value), sort_keys=True, ensure_ascii=False))


def to_shell(value: Any) -> Safe:
    return Safe(shlex.quote(str(value)))


PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


def ident(value: Any) -> Safe:
    """A bare word (a section or cluster name) for formats without quoting; anything else is refused."""
    text = str(value)
    if not PLAIN_NAME.fullmatch(text):
        raise TypeError(f"{text!r} is not a plain name")
    return Safe(text)


def raw(value: Any) -> Safe:
    """For text that is itself a rendered, already-escaped document (a nested file body)."""
    if not isinstance(value, Safe):
        raise TypeError("raw only accepts text rendered by another template")
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)  # IPv4Network, enums: their text form is what ARM expects


def _finalize(value: Any) -> Any:
    if isinstance(value, Safe):
        return value
    raise TypeError(f"value {str(value)[:60]!r} reaches the output without an escaping filter (| j, | sh or | ident)")


class Separator:
    """Emits nothing the first time and a comma afterwards: joins optional blocks into a JSON list."""

    def __init__(self) -> None:
        self._first = True

    def __call__(self) -> Safe:
        if self._first:
            self._first = False
            return Safe("")
        return Safe(",")


@cache
def environment(root: Path | None = None) -> Environment:
    # Jinja is imported where a template is rendered: modules that only need this one's names (Safe, PLAIN_NAME),
    # such as the config rules `hpclz validate` runs, must not pay for it (tests/test_import_guard.py).
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from hpclz.render.bytecode import template_code_cache

    env = Environment(
        loader=FileSystemLoader(str(root or templates_dir())),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_finalize,
        bytecode_cache=template_code_cache(),  # compiled once per template, hpclz and Jinja version (bytecode.py)
    )
    env.filters["j"] = to_json
    env.filters["sh"] = to_shell
    env.filters["raw"] = raw
    env.filters["ident"] = ident
    env.globals["separator"] = Separator
    return env


def render_text(name: str, env: Environment | None = None, **context: Any) -> Safe:
    """Render a template to text; a template bug becomes one line naming the template."""
    from jinja2 import TemplateError

    try:
        return Safe((env or environment()).get_template(name).render(**context))
    except (TemplateError, TypeError) as exc:
        raise TemplateRenderError(f"template {_where(exc, name)}: {exc}") from None


def _where(exc: Exception, name: str) -> str:
    """template:line from the error itself, else from the traceback Jinja rewrites to template lines."""
    line = getattr(exc, "lineno", None)
    file = getattr(exc, "filename", None) or name
    if line is None:
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            filename = frame.f_code.co_filename
            if not filename.endswith(".py"):
                file, line = filename, lineno
    path = Path(str(file))
    if path.is_absolute():
        file = path.relative_to(templates_dir()).as_posix() if path.is_relative_to(templates_dir()) else path.name
    return f"{file}:{line}" if line else str(file)


def render_json(name: str, env: Environment | None = None, **context: Any) -> dict[str, Any]:
    """Render a JSON template and parse it at once, so a broken template fails here, not in Azure."""
    text = render_text(name, env, **context)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        lines = text.splitlines()
        shown = lines[exc.lineno - 1].strip()[:120] if 0 < exc.lineno <= len(lines) else ""
        raise TemplateRenderError(
            f"template {name}: rendered invalid JSON at output line {exc.lineno} column {exc.colno}: {exc.msg}: {shown}"
        ) from None
    if not isinstance(value, dict):
        raise TemplateRenderError(f"template {name}: expected a JSON object at the top level")
    return value
