"""Just enough of the ARM template language to know what a template creates.

Evaluates `[...]` expressions: literals, function calls, property and index access. Unknown
functions evaluate to a readable placeholder instead of failing, because the stand-in only needs
names, types and locations to be right, not every property.
"""

from __future__ import annotations

import functools
import hashlib
import operator
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<name>[A-Za-z_][\w]*)|(?P<op>[().,\[\]]))"
)


class ExpressionError(ValueError):
    pass


@dataclass
class Scope:
    """What an expression can see: parameters, variables, the deployment's target, existing resources."""

    subscription_id: str
    resource_group: str | None
    location: str
    deployment_name: str
    parameters: dict[str, Any] = field(default_factory=dict)
    variables: dict[str, Any] = field(default_factory=dict)
    lookup: Callable[[str], dict[str, Any] | None] = lambda _id: None
    copy_index: dict[str, int] = field(default_factory=dict)


def evaluate(value: Any, scope: Scope) -> Any:
    """Evaluate every expression inside a JSON value."""
    if isinstance(value, str):
        if value.startswith("[[") or not (value.startswith("[") and value.endswith("]")):
            return value[1:] if value.startswith("[[") else value
        return _Parser(value[1:-1], scope).parse()
    if isinstance(value, list):
        return [evaluate(v, scope) for v in value]
    if isinstance(value, dict):
        return {k: evaluate(v, scope) for k, v in value.items()}
    return value


class _Parser:
    def __init__(self, text: str, scope: Scope):
        self.tokens = [(m.lastgroup, m.group(m.lastgroup or "")) for m in _TOKEN.finditer(text) if m.lastgroup]
        self.pos = 0
        self.scope = scope
        self.text = text

    def parse(self) -> Any:
        value = self._expr()
        if self.pos != len(self.tokens):
            raise ExpressionError(f"unexpected text in expression [{self.text}]")
        return value

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self, text: str | None = None) -> tuple[str, str]:
        token = self._peek()
        if token is None or (text is not None and token[1] != text):
            raise ExpressionError(f"expected {text!r} in expression [{self.text}]")
        self.pos += 1
        return token

    def _expr(self) -> Any:
        kind, text = self._take()
        if kind == "str":
            value: Any = text[1:-1].replace("''", "'")
        elif kind == "num":
            value = float(text) if "." in text else int(text)
        elif kind == "name":
            args: list[Any] = []
            self._take("(")
            while self._peek() and self._peek() != ("op", ")"):
                args.append(self._expr())
                if self._peek() == ("op", ","):
                    self._take(",")
            self._take(")")
            value = _call(text, args, self.scope)
        else:
            raise ExpressionError(f"unexpected {text!r} in expression [{self.text}]")
        return self._accessors(value)

    def _accessors(self, value: Any) -> Any:
        while self._peek() in (("op", "."), ("op", "[")):
            if self._take()[1] == ".":
                key = self._take()[1]
                value = value.get(key) if isinstance(value, dict) else f"{value}.{key}"
            else:
                index = self._expr()
                self._take("]")
                value = value[index] if isinstance(value, list | dict) else f"{value}[{index}]"
        return value


def _unique_string(*parts: Any) -> str:
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()
    return "".join(c for c in digest if c.isalnum())[:13]


def _resource_id(scope: Scope, args: list[Any], *, subscription_level: bool = False) -> str:
    args = [str(a) for a in args]
    sub, group = scope.subscription_id, scope.resource_group
    type_index = next(i for i, a in enumerate(args) if "/" in a and "." in a.split("/")[0])
    prefix = args[:type_index]
    if len(prefix) == 2:
        sub, group = prefix
    elif len(prefix) == 1:
        group = prefix[0]
    rtype, names = args[type_index], args[type_index + 1 :]
    namespace, *types = rtype.split("/")
    path = "/".join(f"{t}/{n}" for t, n in zip(types, names, strict=False))
    base = (
        f"/subscriptions/{sub}"
        if subscription_level or group is None
        else f"/subscriptions/{sub}/resourceGroups/{group}"
    )
    return f"{base}/providers/{namespace}/{path}"


def _reference(scope: Scope, args: list[Any]) -> Any:
    found = scope.lookup(str(args[0])) or {}
    full = len(args) > 2 and str(args[2]).lower() == "full"
    return found if full else found.get("properties", {})


def _call(name: str, args: list[Any], scope: Scope) -> Any:
    fn = name.lower()
    rg_id = f"/subscriptions/{scope.subscription_id}/resourceGroups/{scope.resource_group}"
    simple: dict[str, Callable[[], Any]] = {
        "parameters": lambda: scope.parameters[args[0]],
        "variables": lambda: scope.variables[args[0]],
        "concat": lambda: (
            functools.reduce(operator.iadd, args, [])
            if args and isinstance(args[0], list)
            else "".join(str(a) for a in args)
        ),
        "format": lambda: re.sub(r"\{(\d+)\}", lambda m: str(args[1 + int(m.group(1))]), str(args[0])),
        "tolower": lambda: str(args[0]).lower(),
        "toupper": lambda: str(args[0]).upper(),
        "string": lambda: str(args[0]),
        "int": lambda: int(args[0]),
        "bool": lambda: bool(args[0]),
        "length": lambda: len(args[0]),
        "empty": lambda: not args[0],
        "equals": lambda: args[0] == args[1],
        "not": lambda: not args[0],
        "and": lambda: all(args),
        "or": lambda: any(args),
        "if": lambda: args[1] if args[0] else args[2],
        "union": lambda: {k: v for a in args for k, v in a.items()},
        "createobject": lambda: dict(zip(args[::2], args[1::2], strict=False)),
        "createarray": lambda: list(args),
        "coalesce": lambda: next((a for a in args if a is not None), None),
        "replace": lambda: str(args[0]).replace(str(args[1]), str(args[2])),
        "take": lambda: args[0][: args[1]],
        "substring": lambda: str(args[0])[args[1] : args[1] + args[2] if len(args) > 2 else None],
        "uniquestring": lambda: _unique_string(*args),
        "guid": lambda: str(uuid.uuid5(uuid.NAMESPACE_URL, "|".join(str(a) for a in args))),
        "resourceid": lambda: _resource_id(scope, args),
        "subscriptionresourceid": lambda: _resource_id(scope, args, subscription_level=True),
        "resourcegroup": lambda: {"id": rg_id, "name": scope.resource_group, "location": scope.location},
        "subscription": lambda: {
            "id": f"/subscriptions/{scope.subscription_id}",
            "subscriptionId": scope.subscription_id,
            "tenantId": "00000000-0000-0000-0000-00000000aaaa",
        },
        "deployment": lambda: {"name": scope.deployment_name, "location": scope.location},
        "copyindex": lambda: (
            scope.copy_index.get(str(args[-1]) if args and isinstance(args[-1], str) else "", 0)
            + (args[0] if args and isinstance(args[0], int) else 0)
        ),
        # reference(id, api, 'Full') is the whole resource (identity included), otherwise its properties
        # (learn.microsoft.com/azure/azure-resource-manager/templates/template-functions-resource#reference).
        "reference": lambda: _reference(scope, args),
        "environment": lambda: {"name": "AzureCloud", "suffixes": {"storage": "core.windows.net"}},
        "utcnow": lambda: "20260101T000000Z",
        "last": lambda: args[0][-1],
        "first": lambda: args[0][0],
        "split": lambda: str(args[0]).split(str(args[1])),
        "contains": lambda: args[1] in args[0],
        "json": lambda: args[0],
    }
    if fn in simple:
        try:
            return simple[fn]()
        except (KeyError, IndexError, TypeError) as exc:
            raise ExpressionError(f"{name}({', '.join(map(repr, args))}) failed: {exc}") from None
    return f"<{name}>"
