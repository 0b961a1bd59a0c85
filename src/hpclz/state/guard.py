"""Refuse to write a state document that holds a secret.

Two nets: the values of every SecretStr in the config (and any value a caller registers, such as a
secret resolved from `${env:NAME}` at deploy time), and patterns of well-known credential formats
that might arrive from elsewhere (an ARM output, a connection string). Errors name where the secret
sits in the document and which net caught it, never the value.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, SecretStr

from hpclz.secretscan import ENV_REFERENCE, KNOWN_PATTERNS, looks_like_secret
from hpclz.state.errors import SecretInStateError

__all__ = ["ENV_REFERENCE", "KNOWN_PATTERNS", "SecretGuard", "config_secrets"]

# Shorter values would match ordinary words and IDs; a secret that short is not worth guarding.
MIN_SECRET_LENGTH = 6


# Whole-name suffixes only: `keyVaultSecretName` or `passwordExpiryDays` are about secrets, not secrets.
SECRET_NAME = re.compile(
    r"(password|passwd|secret|clientsecret|accountkey|accesskey|primarykey|secondarykey|connectionstring|sastoken"
    r"|^key[12])$",
    re.I,
)
SECRET_MASK = str(SecretStr("x"))
_REFERENCE_PREFIXES = ("https://", "@Microsoft.KeyVault(", "${env:")


def config_secrets(model: BaseModel) -> dict[str, str]:
    """Every SecretStr value in a model tree, keyed by its dotted path (the key is safe to print).

    A `${env:NAME}` placeholder is resolved from the environment, as deploy will resolve it: the
    value deploy sees is the one that must never reach the state.
    """
    found: dict[str, str] = {}
    for path, value in _walk(model, ""):
        raw = value.get_secret_value()
        placeholder = ENV_REFERENCE.match(raw)
        if placeholder:
            raw = os.environ.get(placeholder.group(1), "")
        if len(raw) >= MIN_SECRET_LENGTH:
            found[path] = raw
    return found


def _walk(node: Any, path: str) -> Iterator[tuple[str, SecretStr]]:
    if isinstance(node, SecretStr):
        yield path, node
    elif isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from _walk(getattr(node, name), f"{path}.{name}" if path else name)
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{path}[{key}]")
    elif isinstance(node, list | tuple):
        for index, value in enumerate(node):
            yield from _walk(value, f"{path}[{index}]")


class SecretGuard:
    def __init__(self, secrets: dict[str, str] | None = None):
        self._secrets = dict(secrets or {})
        # Each value as JSON escapes it too (a secret holding a quote or a backslash), worked out once, not per string.
        self._escaped = {label: json.dumps(value)[1:-1] for label, value in self._secrets.items()}

    @classmethod
    def for_config(cls, config: BaseModel) -> SecretGuard:
        return cls(config_secrets(config))

    def add(self, label: str, value: str) -> None:
        """Guard one more value (e.g. a secret resolved at deploy time); `label` is what errors print."""
        if len(value) >= MIN_SECRET_LENGTH:
            self._secrets[label] = value
            self._escaped[label] = json.dumps(value)[1:-1]

    def check(self, data: Any, where: str) -> None:
        """Raise SecretInStateError if any string in `data` (a JSON-able tree) holds a secret."""
        for path, text, is_key in _strings(data, ""):
            reason = self._match(text) or (None if is_key else _secret_by_name(path, text))
            if reason:
                raise SecretInStateError(
                    f"refusing to write state {where}: {path or '<document>'} holds a secret ({reason}); "
                    "state must never contain secrets, so nothing was written"
                )

    def check_text(self, text: str, where: str) -> None:
        """The serialized form as a last net (catches secrets split across keys or escaped oddly)."""
        self.check(json.loads(text), where)
        reason = self._match(text)
        if reason:
            raise SecretInStateError(f"refusing to write state {where}: it holds a secret ({reason}); nothing written")

    def _match(self, text: str) -> str | None:
        for label, value in self._secrets.items():
            if value in text or self._escaped[label] in text:
                return f"the value of {label}"
        return looks_like_secret(text)


def masked(data: Any, path: str = "") -> Any:
    """A copy of a JSON-able tree with every string the guard's patterns or credential-like names catch replaced
    by `<masked: why>`: what `hpclz state show` prints when a secret was planted in the state by hand."""
    if isinstance(data, str):
        reason = looks_like_secret(data) or _secret_by_name(path, data)
        return f"<masked: {reason}>" if reason else data
    if isinstance(data, dict):
        return {key: masked(value, f"{path}.{key}" if path else str(key)) for key, value in data.items()}
    if isinstance(data, list):
        return [masked(value, f"{path}[{index}]") for index, value in enumerate(data)]
    return data


def _secret_by_name(path: str, value: str) -> str | None:
    """An ARM output or property named like a credential (`primaryKey`, `adminPassword`) with a literal value.

    References are fine: a Key Vault URI or reference, an ARM expression such as
    `[parameters('adminPassword')]`, or a `${env:...}` placeholder names a secret without holding it.
    """
    name = path.rsplit(".", 1)[-1]
    if not SECRET_NAME.search(name) or len(value) < MIN_SECRET_LENGTH or value.startswith(_REFERENCE_PREFIXES):
        return None
    if value == SECRET_MASK:  # what a SecretStr dumps as: the config's secrets, already masked
        return None
    if value.startswith("[") and not value.startswith("[["):  # an ARM expression, resolved by ARM (`[[` escapes)
        return None
    return f"a literal value under a credential-like name '{name}'"


def _strings(node: Any, path: str) -> Iterator[tuple[str, str, bool]]:
    """(path, text, is it a mapping key) for every string in a JSON-able tree; keys can leak secrets too."""
    if isinstance(node, str):
        yield path, node, False
    elif isinstance(node, dict):
        for key, value in node.items():
            child = f"{path}.{key}" if path else str(key)
            yield child, str(key), True
            yield from _strings(value, child)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, f"{path}[{index}]")
