"""Line numbers for a template as `json.dumps(template, indent=2, sort_keys=True)` writes it.

Rendered templates are dicts, not parsed files, so findings point into their canonical pretty-printed
form: the file render writes and the one a user opens. Positions follow json.dumps' layout exactly
(one key or item per line, empty containers inline), which tests/arm check against the real output.
"""

from __future__ import annotations

import json
from typing import Any

from hpclz.config.source_map import Path, Position, SourceMap

INDENT = 2


def pretty_json(template: Any) -> str:
    """The layout hpclz.render.writer uses for template files: sorted keys, two-space indent."""
    return json.dumps(template, indent=INDENT, sort_keys=True, ensure_ascii=False)


def locate_template(file: str, template: Any) -> SourceMap:
    source = SourceMap(file=file, data=template)
    source.values[()] = Position(1, 1)
    _walk(template, (), 1, 0, source)
    return source


def _walk(node: Any, path: Path, line: int, depth: int, source: SourceMap) -> int:
    """Record positions below `node`, which starts on `line`; return the line its text ends on."""
    if isinstance(node, dict) and node:
        column = (depth + 1) * INDENT + 1
        for key, value in sorted(node.items()):
            line += 1
            here = (*path, key)
            source.keys[here] = Position(line, column)
            source.values[here] = Position(line, column + len(json.dumps(str(key), ensure_ascii=False)) + 2)
            line = _walk(value, here, line, depth + 1, source)
        return line + 1
    if isinstance(node, list) and node:
        column = (depth + 1) * INDENT + 1
        for index, value in enumerate(node):
            line += 1
            here = (*path, index)
            source.values[here] = Position(line, column)
            line = _walk(value, here, line, depth + 1, source)
        return line + 1
    return line
