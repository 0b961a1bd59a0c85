"""Attribute-level detail of plan lines: every property a created resource gets (terraform's `+ name = value`),
and how many properties an update leaves as they are (terraform's "unchanged attributes hidden").

Values that carry a secret are shown as `(sensitive)`: a value that refers to a secureString/secureObject
template parameter (resolved only at deploy time, hpclz.deploy.secrets, so the rendered body holds only the
reference), a string under a key that names a secret (`adminPassword`, `connectionString`), and a Key Vault
secret's `properties.value`. Rendered templates never hold a secret in clear text; the mask keeps it so
if one ever did, and says which values are secret instead of printing an expression.
"""

from __future__ import annotations

import re
from typing import Any

from hpclz.plan.changeset import Action, PropertyChange

SENSITIVE = "(sensitive)"
# Keys whose string value is a secret in ARM resource bodies: osProfile.adminPassword, a MySQL flexible server's
# administratorLoginPassword, connection strings, SAS tokens, access keys, private keys.
_SECRET_KEY = re.compile(
    r"password|passphrase|secret$|secretvalue|privatekey|sastoken|connectionstring|accesskey", re.I
)
_PARAMETER = re.compile(r"parameters\(\s*'([^']+)'\s*\)")
_KEY_VAULT_SECRET = "microsoft.keyvault/vaults/secrets"
# Keys that identify a resource rather than describe it: the plan line already names it.
IDENTITY_KEYS = frozenset({"id", "name", "type", "apiVersion"})


def leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """`(path, value)` for every leaf: maps by key, lists of named objects by `[name]`, other lists whole."""
    if isinstance(value, dict) and value:
        out: list[tuple[str, Any]] = []
        for key, sub in value.items():
            out.extend(leaves(sub, f"{path}.{key}" if path else str(key)))
        return out
    if _named_list(value):
        return [leaf for item in value for leaf in leaves(item, f"{path}[{item['name']}]")]
    return [(path, value)]


def _named_list(value: Any) -> bool:
    if not isinstance(value, list) or not value or not all(isinstance(i, dict) for i in value):
        return False
    names = [i.get("name") for i in value]
    return all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def _last_key(path: str) -> str:
    return re.split(r"[.\[]", path)[-1].rstrip("]")


def sensitive(rtype: str, path: str, value: Any, secure: frozenset[str]) -> bool:
    """Whether the value at `path` carries a secret (see the module docstring)."""
    if rtype.lower() == _KEY_VAULT_SECRET and path == "properties.value":
        return True
    text = value if isinstance(value, str) else None
    if text is None:
        return False
    if secure and any(name in secure for name in _PARAMETER.findall(text)):
        return True
    return bool(text) and bool(_SECRET_KEY.search(_last_key(path)))


def masked(rtype: str, path: str, value: Any, secure: frozenset[str] = frozenset()) -> Any:
    return SENSITIVE if sensitive(rtype, path, value, secure) else value


def attributes(rtype: str, body: dict[str, Any], secure: frozenset[str] = frozenset()) -> list[PropertyChange]:
    """Every property a resource is created with, as additions, secrets masked."""
    shown = {k: v for k, v in body.items() if k not in IDENTITY_KEYS}
    return [
        PropertyChange(path=path, kind=Action.CREATE, after=masked(rtype, path, value, secure))
        for path, value in leaves(shown)
    ]


def unchanged_count(after: Any, changed: list[PropertyChange]) -> int:
    """Leaves of `after` that no change touches (a change to `a.b` touches `a.b.c`, and a change to `a.b.c` or
    to `a.b[x]` touches `a.b` where `a.b` is one leaf)."""
    paths = [c.path for c in changed]
    return sum(1 for leaf, _ in leaves(after) if not any(_related(leaf, p) for p in paths))


def _related(a: str, b: str) -> bool:
    return a == b or _under(a, b) or _under(b, a)


def _under(child: str, parent: str) -> bool:
    return bool(parent) and child.startswith(parent) and child[len(parent)] in ".[:"
