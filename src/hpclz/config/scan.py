"""Checks on every string of a config, before the model sees it: each problem is located by the source map.

Three things no field should ever hold: control characters (a NUL in a tag value is refused by Azure or
truncates in C tools on the node), a secret reference that does not match the documented `${env:NAME}`
syntax (it would be deployed as the literal secret value), and a value that looks like a credential
outside identity.key_vault.secrets (a tag holding a connection string passed validate and plan, then deploy
failed only after creating resources, when the state guard refused to record it).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from typing import Any

from hpclz.config.source_map import Path, SourceMap, display_path
from hpclz.errors import ConfigProblem
from hpclz.secretscan import ENV_REFERENCE, REFERENCE_START, looks_like_secret

SECRETS_PATH: Path = ("identity", "key_vault", "secrets")
CONTAINERS_PATH: Path = ("storage", "blob", "containers")


def _holds_secret(path: Path) -> bool:
    """A Key Vault secret's value, or a blob container's checkpoint-manifest signing key (docs/checkpoints.md)."""
    in_vault = len(path) == len(SECRETS_PATH) + 1 and path[:-1] == SECRETS_PATH
    manifest_key = len(path) == len(CONTAINERS_PATH) + 2 and path[:3] == CONTAINERS_PATH and path[-1] == "manifest_key"
    return in_vault or manifest_key


def string_problems(source: SourceMap) -> list[ConfigProblem]:
    problems = []
    for path, text, is_key in _strings(source.data, ()):
        message, code = _problem(path, text, is_key)
        if message:
            position = source.locate(path)
            shown = display_path(path, source.data)
            problems.append(ConfigProblem(source.file, position.line, position.column, shown, message, code))
    return problems


def _problem(path: Path, text: str, is_key: bool) -> tuple[str | None, str]:
    bad = next((ch for ch in text if unicodedata.category(ch) == "Cc"), None)
    if bad is not None:
        where = "key" if is_key else "value"
        return f"the {where} holds control character U+{ord(bad):04X}; write printable text only", "control_character"
    if is_key:
        return None, ""
    is_secret = _holds_secret(path)
    if REFERENCE_START in text:
        if not is_secret:
            return (
                "`${...}` references are resolved only in identity.key_vault.secrets (and a container's manifest_key)",
                "secret_reference",
            )
        if not ENV_REFERENCE.match(text):
            return (
                "malformed secret reference; write exactly ${env:NAME}, NAME of letters, digits and _",
                "secret_reference",
            )
    kind = None if is_secret else looks_like_secret(text)
    if kind:
        return f"holds what looks like a secret ({kind}); put it in identity.key_vault.secrets", "secret_value"
    return None, ""


def _strings(node: Any, path: Path) -> Iterator[tuple[Path, str, bool]]:
    if isinstance(node, str):
        yield path, node, False
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str):
                yield (*path, key), key, True
            yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, (*path, index))
