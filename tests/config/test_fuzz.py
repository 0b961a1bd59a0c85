"""Property test: mutated presets, structurally and as YAML text, never crash, hang or escape as an internal
error. Every outcome is a clean validate result or a ConfigError whose every problem is located.

Under CI (`CI=true`) each property runs a fixed, derandomized set of cases (thousands in all, about a minute on
a 2-core machine); locally fewer, randomly seeded. The per-case deadline is a hang detector, generous by two
orders of magnitude over a normal case, not a speed assertion.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpclz.config import load_config_text
from hpclz.config.bounds import MAX_CONFIG_BYTES
from hpclz.errors import ConfigError, HpclzError
from hpclz.services.validate import check_config
from tests.conftest import REPO

PRESETS = {p.stem: p.read_text(encoding="utf-8") for p in sorted((REPO / "configs").glob("*.yaml"))}
PRESET_DATA = {name: load_config_text(text, name).source.data for name, text in PRESETS.items()}

IN_CI = os.environ.get("CI") == "true"
PROFILE = settings(
    max_examples=1000 if IN_CI else 150,
    deadline=timedelta(seconds=5),
    derandomize=IN_CI,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
pytestmark = pytest.mark.timeout(300)

# What real mistakes and hostile files put into a config: YAML syntax that changes meaning, tags, anchors,
# control characters, secret-looking text, very long numbers, and paths Linux treats specially.
TOKENS = [
    "&a ", "*a", "<<: *a", "!!python/object/apply:os.system ['x']", "!!binary", "!custom ", "---\n", "...\n",
    "%YAML 1.1\n", "? ", ": ", "- ", "[", "]", "{", "}", "|\n", ">-\n", "'", '"', "\\", "\t", "\x00", "\x1b",
    "\ufeff", "\u202e", "#", ",", "~", "null", "true", "yes", "0x1F", "0o17", "1e999", ".nan", "-.inf",
    "9" * 5000, "${env:}", "${ENV:X}", "${env:OK}", "AccountKey=" + "A" * 40, "/etc", "/tmp/../boot", "..",
    "root", "admin", "Mars/Olympus", "Pacific Standard Time", "\ud800", "😀",
]  # fmt: skip

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(TOKENS),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(data: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    if not path:
        return value if action == "replace" else data
    *parents, last = path
    node = data
    for part in parents:
        node = node[part]
    if action == "delete":
        del node[last]
    elif action == "duplicate" and isinstance(node, list):
        node.append(json.loads(json.dumps(node[last])))
    elif action == "add_key" and isinstance(node[last], dict):
        node[last][str(value)[:20] or "k"] = value
    else:
        node[last] = value
    return data


@st.composite
def structural_mutants(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(sorted(PRESET_DATA)))
    data = json.loads(json.dumps(PRESET_DATA[name]))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(data)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "replace", "delete", "duplicate", "add_key"]))
        data = _mutate(data, path, action, draw(VALUES))
    style = draw(st.sampled_from(["json", "yaml"]))
    if style == "json":
        return json.dumps(data, ensure_ascii=draw(st.booleans()))
    from io import StringIO

    from ruamel.yaml import YAML

    stream = StringIO()
    YAML(typ="safe", pure=True).dump(data, stream)
    return stream.getvalue()


@st.composite
def text_mutants(draw: st.DrawFn) -> str:
    text = PRESETS[draw(st.sampled_from(sorted(PRESETS)))]
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        edit = draw(st.sampled_from(["insert", "delete", "duplicate_line", "swap_lines", "indent", "truncate"]))
        at = draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))
        if edit == "insert":
            text = text[:at] + draw(st.sampled_from(TOKENS) | st.text(max_size=8)) + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + draw(st.integers(min_value=1, max_value=40)) :]
        elif edit in ("duplicate_line", "swap_lines", "indent") and lines:
            i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
            j = draw(st.integers(min_value=0, max_value=len(lines) - 1))
            if edit == "duplicate_line":
                lines.insert(j, lines[i])
            elif edit == "swap_lines":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines[i] = draw(st.sampled_from([" ", "  ", "\t", "- "])) + lines[i]
            text = "".join(lines)
        else:
            text = text[:at]
        lines = text.splitlines(keepends=True)
    return text


def _outcome_is_clean_or_located(text: str) -> None:
    try:
        loaded = load_config_text(text, "fuzz.yaml")
    except ConfigError as exc:
        assert exc.problems, "a ConfigError must carry its problems"
        for problem in exc.problems:
            assert problem.file == "fuzz.yaml" and problem.line >= 1 and problem.column >= 1, problem.one_line()
            assert problem.message and "\n" not in problem.one_line(), problem.one_line()
        return
    try:
        findings, _ = check_config(loaded)
    except HpclzError as exc:  # a typed, user-facing refusal (e.g. an unknown suppressed rule ID) is fine
        assert str(exc)
        return
    for finding in findings:
        assert finding.rule_id.startswith("HPCLZ-") and finding.message


@PROFILE
@given(structural_mutants())
def test_structurally_mutated_presets_end_cleanly(text: str) -> None:
    _outcome_is_clean_or_located(text)


@PROFILE
@given(text_mutants())
def test_textually_mutated_presets_end_cleanly(text: str) -> None:
    _outcome_is_clean_or_located(text)


@settings(max_examples=60 if IN_CI else 15, deadline=timedelta(seconds=10), database=None, derandomize=IN_CI)
@given(text_mutants())
def test_mutated_presets_through_the_cli_give_an_envelope_never_a_traceback(tmp_path_factory: Any, text: str) -> None:
    from contextlib import redirect_stderr, redirect_stdout
    from io import StringIO

    from hpclz.cli import main

    config = tmp_path_factory.mktemp("fuzz") / "zone.yaml"
    config.write_text(text[:MAX_CONFIG_BYTES], encoding="utf-8", errors="surrogatepass")
    out, err = StringIO(), StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["validate", str(config), "-o", "json"])
    assert code in (0, 1, 3), err.getvalue()
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue()
    envelope = json.loads(out.getvalue())
    assert envelope["exit_code"] == code
    if code == 3:
        assert envelope["errors"] and all(e["message"] for e in envelope["errors"])
