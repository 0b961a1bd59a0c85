"""Which resource a name, a resourceId(...) or a relative resource ID means, as comparable name segments.

ARM names a child 'parent/child'; templates write it as a literal, as format('{0}/{1}', ...) (what Bicep
itself compiles `parent:` children to), or as a nested resource's short name; dependsOn names the same
resource as resourceId(type, seg1, seg2, ...) (learn.microsoft.com/azure/azure-resource-manager/templates/
template-functions-resource#resourceid). Reducing each to its segments, literal text or an expression's
canonical text, lets them be matched without evaluating anything.
"""

from __future__ import annotations

import re

from hpclz.arm.expressions import Call, Expr, Literal, parse_template_string, to_text
from hpclz.render.bicep.syntax import BicepExportError

Segments = tuple[str, ...]
_PLACEHOLDER = re.compile(r"^\{(\d+)\}$")


def _segments(expr: Expr) -> Segments | None:
    if isinstance(expr, Literal):
        return tuple(str(expr.value).lower().split("/")) if isinstance(expr.value, str) else None
    if isinstance(expr, Call) and expr.name.lower() == "format" and expr.args:
        template = expr.args[0]
        if not isinstance(template, Literal) or not isinstance(template.value, str):
            return None
        out: list[str] = []
        for piece in template.value.split("/"):
            match = _PLACEHOLDER.match(piece)
            if match is None and "{" in piece:
                return None  # text and a placeholder in one segment: not matched rather than guessed
            inner = _segments(expr.args[int(match.group(1)) + 1]) if match else (piece.lower(),)
            if inner is None:
                return None
            out.extend(inner)
        return tuple(out)
    return (to_text(expr).lower(),)


def name_segments(name: object) -> Segments | None:
    """The segments of a resource's `name` value; None when they cannot be told apart."""
    if not isinstance(name, str):
        return None
    parsed = parse_template_string(name)
    return _segments(parsed if parsed is not None else Literal(name[1:] if name.startswith("[[") else name))


def _is_type(expr: Expr) -> bool:
    return isinstance(expr, Literal) and isinstance(expr.value, str) and "." in expr.value.split("/")[0]


def reference_of(target: str) -> tuple[str, Segments]:
    """(type, segments) of what a dependsOn entry or `scope` names: resourceId(...) or 'Ns/type/name[/type/name]'."""
    parsed = parse_template_string(target)
    if parsed is None:
        parts = target.strip("/").split("/")
        if len(parts) < 3 or len(parts) % 2 == 0:
            raise BicepExportError(f"{target!r} is not a relative resource ID")
        return "/".join([parts[0], *parts[1::2]]), tuple(p.lower() for p in parts[2::2])
    if isinstance(parsed, Call) and parsed.name.lower() == "resourceid":
        at = next((i for i, a in enumerate(parsed.args) if _is_type(a)), None)
        if at is not None and at <= 2:
            names = [_segments(a) for a in parsed.args[at + 1 :]]
            if all(n is not None for n in names):
                kind = parsed.args[at]
                assert isinstance(kind, Literal)
                return str(kind.value), tuple(s for n in names if n for s in n)
    raise BicepExportError(f"cannot tell which resource {target!r} names")
