"""Where each value of a YAML document came from, so errors and findings can name file:line:col."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.scalarbool import ScalarBoolean

PathPart = str | int
Path = tuple[PathPart, ...]


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based


@dataclass
class SourceMap:
    """Positions of keys and values by config path; plain data beside it, free of ruamel types."""

    file: str
    data: Any = None
    keys: dict[Path, Position] = field(default_factory=dict)
    values: dict[Path, Position] = field(default_factory=dict)

    def locate(self, path: Sequence[PathPart]) -> Position:
        """The best position for a path: the key itself, else its value, else its nearest ancestor."""
        parts = tuple(path)
        while parts:
            if parts in self.keys:
                return self.keys[parts]
            if parts in self.values:
                return self.values[parts]
            parts = parts[:-1]
        return self.values.get((), Position(1, 1))

    def value_at(self, path: Sequence[PathPart]) -> Any:
        return lookup(self.data, path)


def lookup(node: Any, path: Sequence[PathPart]) -> Any:
    """The value at a path of dict keys and list indexes in plain data, or None where the path leads nowhere."""
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return None
    return node


def build(file: str, node: Any) -> SourceMap:
    source = SourceMap(file=file)
    if hasattr(node, "lc"):
        source.values[()] = Position(node.lc.line + 1, node.lc.col + 1)
    source.data = _walk(node, (), source)
    return source


def _walk(node: Any, path: Path, source: SourceMap) -> Any:
    if isinstance(node, CommentedMap):
        out: dict[Any, Any] = {}
        for key, value in node.items():
            here = (*path, key)
            key_at, value_at = _positions(node, key)
            source.keys[here] = key_at
            source.values[here] = value_at
            out[key] = _walk(value, here, source)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for index, value in enumerate(node):
            here = (*path, index)
            line, col = node.lc.item(index)
            source.values[here] = Position(line + 1, col + 1)
            items.append(_walk(value, here, source))
        return items
    if isinstance(node, TaggedScalar):  # `!!str 4711`, the only scalar tag hpclz.config.bounds lets through
        return _join_surrogate_pairs(str(node.value))
    if isinstance(node, str):
        return _join_surrogate_pairs(str(node))
    return _plain_scalar(node)


def _plain_scalar(node: Any) -> Any:
    """ruamel keeps formatting in subclasses: an anchored `&x true` is a ScalarBoolean, which is an int, so
    `max_nodes: *x` would pass as 1; `0x1F` or `1_000` is a ScalarInt. The model sees plain Python values."""
    if isinstance(node, ScalarBoolean):
        return bool(node)
    if isinstance(node, int) and not isinstance(node, bool):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return node


def _positions(node: CommentedMap, key: Any) -> tuple[Position, Position]:
    """Where a key and its value sit; a key merged in with `<<: *anchor` has no position of its own in this
    mapping (ruamel raises KeyError), so it is placed at the mapping that merges it."""
    try:
        (kline, kcol), (vline, vcol) = node.lc.key(key), node.lc.value(key)
    except (KeyError, TypeError):
        kline, kcol = vline, vcol = node.lc.line, node.lc.col
    return Position(kline + 1, kcol + 1), Position(vline + 1, vcol + 1)


def _join_surrogate_pairs(text: str) -> str:
    """JSON (a subset of YAML 1.2) writes a character outside the BMP as an escaped surrogate pair, which the
    YAML parser returns as two lone surrogates; join them so a JSON config means what it says."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def display_path(path: Sequence[PathPart], data: Any = None) -> str:
    """`compute.partitions[gpu].vm_size`: list items are named by their `name` key when they have one."""
    text = ""
    node = data
    for part in path:
        if isinstance(part, int):
            label: str = str(part)
            if isinstance(node, list) and 0 <= part < len(node):
                item = node[part]
                if isinstance(item, dict) and isinstance(item.get("name"), str):
                    label = item["name"]
                node = item
            else:
                node = None
            text += f"[{label}]"
        else:
            text += f".{part}" if text else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return text
