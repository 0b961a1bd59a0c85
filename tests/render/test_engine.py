from __future__ import annotations

import json
from pathlib import Path

import pytest
from jinja2 import Environment

from hpclz.render.engine import TemplateRenderError, environment, render_json, render_text


def _env(tmp_path: Path, **templates: str) -> Environment:
    for name, text in templates.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    environment.cache_clear()
    return environment(tmp_path)


def test_json_filter_escapes_quotes_newlines_and_backslashes(tmp_path: Path) -> None:
    env = _env(tmp_path, **{"t.json.j2": '{"value": {{ v | j }}}'})
    hostile = 'a"b\\c\nd}{ "e": 1'
    assert render_json("t.json.j2", env, v=hostile) == {"value": hostile}


def test_value_without_an_escaping_filter_is_refused(tmp_path: Path) -> None:
    env = _env(tmp_path, **{"t.json.j2": '{"value": "{{ v }}"}'})
    with pytest.raises(
        TemplateRenderError, match=r"template t.json.j2:1: value 'x' reaches the output without an escaping filter"
    ):
        render_json("t.json.j2", env, v="x")


def test_undefined_name_names_template_and_line(tmp_path: Path) -> None:
    env = _env(tmp_path, **{"t.json.j2": '{\n  "a": 1,\n  "b": {{ missing.attr | j }}\n}'})
    with pytest.raises(TemplateRenderError, match=r"template t.json.j2:3: 'missing' is undefined"):
        render_json("t.json.j2", env)


def test_invalid_json_names_template_and_output_line(tmp_path: Path) -> None:
    env = _env(tmp_path, **{"t.json.j2": '{\n  "a": 1,\n  "b": {{ v | j }}\n  "c": 2\n}'})
    with pytest.raises(TemplateRenderError) as caught:
        render_json("t.json.j2", env, v=1)
    assert "template t.json.j2: rendered invalid JSON at output line 4" in str(caught.value)
    assert '"c": 2' in str(caught.value)


def test_shell_filter_quotes_for_bash(tmp_path: Path) -> None:
    env = _env(tmp_path, **{"t.sh.j2": "echo {{ v | sh }}"})
    assert render_text("t.sh.j2", env, v="it's $(rm -rf /)") == "echo 'it'\"'\"'s $(rm -rf /)'"


def test_ident_filter_refuses_anything_but_a_plain_name(tmp_path: Path) -> None:
    env = _env(tmp_path, **{"t.txt.j2": "[cluster {{ v | ident }}]"})
    assert render_text("t.txt.j2", env, v="zone-prod") == "[cluster zone-prod]"
    with pytest.raises(TemplateRenderError, match="is not a plain name"):
        render_text("t.txt.j2", env, v="x]\n[cluster y")


def test_separator_joins_optional_blocks(tmp_path: Path) -> None:
    text = "{% set s = separator() %}[{% for i in items if i > 1 %}{{ s() }}{{ i | j }}{% endfor %}]"
    env = _env(tmp_path, **{"t.json.j2": '{"x": ' + text + "}"})
    assert render_json("t.json.j2", env, items=[1, 2, 3]) == {"x": [2, 3]}
    assert json.dumps(render_json("t.json.j2", env, items=[1])) == '{"x": []}'
