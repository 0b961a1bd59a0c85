"""A field's description is its Field(description=...): the config models do not read attribute docstrings
(hpclz.config.base.StrictModel says why), so a docstring under a field would silently be lost from the JSON
Schema and docs/config-reference.md."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hpclz.config.base import StrictModel
from tests.conftest import REPO

CONFIG_SOURCES = sorted((REPO / "src" / "hpclz" / "config").glob("*.py"))


def _attribute_docstrings(source: str) -> list[str]:
    """`Class.field` for every string statement right after an annotated field in a class body."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        for before, after in zip(node.body, node.body[1:], strict=False):
            if (
                isinstance(before, ast.AnnAssign)
                and isinstance(before.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                found.append(f"{node.name}.{before.target.id}")
    return found


@pytest.mark.parametrize("path", CONFIG_SOURCES, ids=lambda p: p.name)
def test_no_config_field_is_described_by_a_docstring(path: Path) -> None:
    assert _attribute_docstrings(path.read_text(encoding="utf-8")) == [], "use Field(description=...)"


def test_the_check_finds_an_attribute_docstring() -> None:
    source = 'class Zone(StrictModel):\n    name: str = "x"\n    """The zone\'s name."""\n    size: int = 1\n'
    assert _attribute_docstrings(source) == ["Zone.name"]


def test_the_models_do_not_read_attribute_docstrings() -> None:
    assert not StrictModel.model_config.get("use_attribute_docstrings")
