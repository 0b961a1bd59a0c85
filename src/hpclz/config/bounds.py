"""Limits on what the config loader reads, checked before anything is built from the YAML.

A config is a few kilobytes written by a person. Without these bounds a 5 KB file of nested aliases
(a "billion laughs") expands to gigabytes, 5,000 levels of nesting overflow the recursive composer, a
5,000-digit integer trips Python's int/str conversion limit, and `/dev/zero` or a FIFO never finish
reading. Each limit is documented with its value in docs/config-limits.md (generated from this module).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import events

MAX_CONFIG_BYTES = 1024 * 1024
"""Largest config file read, in bytes; the biggest preset is under 10 KB."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences, counted after aliases are expanded; the model needs 7."""
MAX_EXPANDED_NODES = 100_000
"""Most YAML nodes the document may hold once every alias is expanded (billion-laughs guard)."""
MAX_ALIASES = 1_000
"""Most alias references (`*name`, `<<: *name`) in one file."""
MAX_INTEGER_DIGITS = 100
"""Longest plain integer scalar, in digits: far below Python's own int/str limit of 4300 digits."""

CORE_TAG_PREFIX = "tag:yaml.org,2002:"
ALLOWED_TAGS = frozenset(CORE_TAG_PREFIX + name for name in ("str", "map", "seq"))
"""`!!str` (to keep `4711` a string) and the collection tags; anything else (`!!python/object/apply`, `!custom`,
and `!!int`-style coercions a plain value already expresses) is refused."""

LIMITS: tuple[tuple[str, int, str], ...] = (
    ("MAX_CONFIG_BYTES", MAX_CONFIG_BYTES, "file size in bytes"),
    ("MAX_DEPTH", MAX_DEPTH, "nesting depth of mappings and sequences, aliases expanded"),
    ("MAX_EXPANDED_NODES", MAX_EXPANDED_NODES, "YAML nodes after alias expansion"),
    ("MAX_ALIASES", MAX_ALIASES, "alias references in one file"),
    ("MAX_INTEGER_DIGITS", MAX_INTEGER_DIGITS, "digits in one plain integer"),
)

_INTEGER_LIKE = re.compile(r"^[-+]?(0[xob])?[0-9a-fA-F_]+$")


@dataclass(frozen=True)
class Breach:
    """A limit the text exceeds, at a 1-based line and column."""

    line: int
    column: int
    message: str
    code: str


class ReadRefused(Exception):
    """The file is not something a config can be read from (special file, too big)."""


def read_bounded(path: str | os.PathLike[str]) -> str:
    """Read a regular file of at most MAX_CONFIG_BYTES; stat first, so a FIFO or device is never opened."""
    info = Path(path).stat()
    if stat.S_ISDIR(info.st_mode):
        raise ReadRefused("is a directory, not a config file")
    if not stat.S_ISREG(info.st_mode):
        raise ReadRefused("is not a regular file (a device, FIFO or socket never ends or blocks); refusing to read it")
    if info.st_size > MAX_CONFIG_BYTES:
        raise ReadRefused(f"is {info.st_size} bytes; a config may be at most {MAX_CONFIG_BYTES} bytes")
    with Path(path).open("rb") as stream:
        # The size may have grown since stat: the cap holds whatever the file has become.
        data = stream.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ReadRefused(f"is larger than {MAX_CONFIG_BYTES} bytes, the most a config may be")
    return data.decode("utf-8")


class BoundsExceeded(Exception):
    """The text breaks a limit; raised from the parser, before the composer builds anything past it."""

    def __init__(self, breach: Breach) -> None:
        super().__init__(breach.message)
        self.breach = breach


def guarded_parser(base: type[Any]) -> type[Any]:
    """ruamel's parser class `base`, with every event checked against the limits as the composer takes it.

    One pass over the text instead of two (walking `YAML.parse` first, then `YAML.load`, read it twice: about a
    third of a config's load time). The guarantees hold because of the order ruamel.yaml (0.19.1, as installed)
    works in: the composer takes every event through `Parser.get_event` (ruamel/yaml/composer.py, compose_node and
    compose_*_node), builds the whole node graph with an alias as a reference to the anchored node, never a copy,
    and only then does the constructor build Python objects from it (ruamel/yaml/constructor.py,
    BaseConstructor.get_single_data: `node = self.composer.get_single_node()`, then `construct_document(node)`).
    So a breach stops the load while the composer is at most MAX_DEPTH levels deep and before any object is built
    or alias expanded. One order changes: an error the composer finds (an undefined alias) is now reported where
    it occurs, before a limit broken later in the file, not after it.
    """

    class Guarded(base):  # type: ignore[misc]  # ruamel's parser classes are untyped
        def __init__(self, loader: Any) -> None:
            super().__init__(loader)
            self.bounds = _Walker()

        def get_event(self) -> Any:
            event = super().get_event()
            breach = self.bounds.visit(event) if event is not None else None
            if breach:
                raise BoundsExceeded(breach)
            return event

    return Guarded


@dataclass
class _Frame:
    """An open collection: how many nodes and how deep it is once its aliases are expanded."""

    anchor: str | None
    nodes: int = 1
    depth: int = 0


class _Walker:
    def __init__(self) -> None:
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[int, int]] = {}  # anchor -> (expanded nodes, depth) of what it names
        self.aliases = 0

    def visit(self, event: events.Event) -> Breach | None:
        if isinstance(event, events.CollectionStartEvent | events.ScalarEvent):
            breach = _tag_breach(event) or _integer_breach(event)
            if breach:
                return breach
        if isinstance(event, events.CollectionStartEvent):
            self.stack.append(_Frame(event.anchor))
            if len(self.stack) > MAX_DEPTH:
                return _breach(event, f"nesting deeper than {MAX_DEPTH} levels", "yaml_too_deep")
            return None
        if isinstance(event, events.CollectionEndEvent) and self.stack:
            frame = self.stack.pop()
            return self._add(event, frame.nodes, frame.depth + 1, frame.anchor)
        if isinstance(event, events.ScalarEvent):
            return self._add(event, 1, 0, event.anchor)
        if isinstance(event, events.AliasEvent):
            return self._alias(event)
        return None

    def _alias(self, event: events.AliasEvent) -> Breach | None:
        self.aliases += 1
        if self.aliases > MAX_ALIASES:
            return _breach(event, f"more than {MAX_ALIASES} aliases", "yaml_too_many_aliases")
        nodes, depth = self.anchors.get(str(event.anchor), (1, 0))  # an unknown anchor is the composer's error
        return self._add(event, nodes, depth, None)

    def _add(self, event: events.Event, nodes: int, depth: int, anchor: str | None) -> Breach | None:
        if anchor is not None:
            self.anchors[anchor] = (nodes, depth)
        if len(self.stack) + depth > MAX_DEPTH:
            return _breach(event, f"aliases expand to nesting deeper than {MAX_DEPTH} levels", "yaml_too_deep")
        if self.stack:
            parent = self.stack[-1]
            parent.nodes += nodes
            parent.depth = max(parent.depth, depth)
            if parent.nodes > MAX_EXPANDED_NODES:
                return _breach(event, f"aliases expand to more than {MAX_EXPANDED_NODES} nodes", "yaml_alias_expansion")
        return None


def _tag_breach(event: events.NodeEvent) -> Breach | None:
    tag = getattr(event, "tag", None)
    if tag is None or str(tag) in ALLOWED_TAGS or (isinstance(event, events.ScalarEvent) and str(tag) == "!"):
        return None
    shown = "!!" + str(tag)[len(CORE_TAG_PREFIX) :] if str(tag).startswith(CORE_TAG_PREFIX) else str(tag)
    return _breach(event, f"YAML tag '{shown}' is not allowed; write plain values", "yaml_tag")


def _integer_breach(event: events.NodeEvent) -> Breach | None:
    if not isinstance(event, events.ScalarEvent) or event.style is not None:
        return None
    value = str(event.value)
    if len(value) > MAX_INTEGER_DIGITS and _INTEGER_LIKE.match(value):
        digits = sum(ch.isalnum() for ch in value)
        if digits > MAX_INTEGER_DIGITS:
            return _breach(event, f"an integer of {digits} digits; at most {MAX_INTEGER_DIGITS}", "yaml_integer")
    return None


def _breach(event: events.Event, message: str, code: str) -> Breach:
    mark = event.start_mark
    return Breach(mark.line + 1, mark.column + 1, message, code)
