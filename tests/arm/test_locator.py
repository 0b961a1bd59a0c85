"""Finding positions point at the right line and column of the template file hpclz render writes."""

from __future__ import annotations

import json

from hpclz.arm.locator import locate_template, pretty_json
from hpclz.render.writer import dumps
from tests.arm.support import load


def test_pretty_json_is_the_render_writers_layout() -> None:
    template = load("good.json")
    assert pretty_json(template) + "\n" == dumps(template)


def test_every_key_and_item_is_located_exactly() -> None:
    template = load("good.json")
    lines = pretty_json(template).splitlines()
    source = locate_template("t.json", template)
    assert len(source.keys) > 100
    for path, position in source.keys.items():
        text = lines[position.line - 1]
        assert text[position.column - 1 :].startswith(json.dumps(str(path[-1])) + ":"), (path, text)
    for path, position in source.values.items():
        if path and isinstance(path[-1], int):
            item = source.value_at(path)
            text = lines[position.line - 1][position.column - 1 :]
            expected = json.dumps(item)[:1] if isinstance(item, dict | list) else json.dumps(item)
            assert text.startswith(expected), (path, text)
