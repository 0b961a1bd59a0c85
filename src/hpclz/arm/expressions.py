"""A tokenizer and recursive-descent parser for ARM template expressions ("[...]" strings).

Grammar (learn.microsoft.com/azure/azure-resource-manager/templates/template-expressions):

    expression := primary accessor*
    primary    := call | string | number | 'true' | 'false' | 'null'
    call       := NAME ('.' NAME)? '(' (expression (',' expression)*)? ')'
    accessor   := '.' NAME | '[' expression ']'
    string     := "'" ( [^'] | "''" )* "'"

A JSON string is an expression when it starts with "[" and ends with "]"; "[[" at the start escapes
the bracket and makes the whole string a literal. Bare true/false/null are accepted beside the
true()/false()/null() functions because the Bicep-compiled JSON ARM accepts uses both forms.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "Call",
    "Expr",
    "ExpressionError",
    "Index",
    "Literal",
    "Property",
    "expression_body",
    "looks_like_broken_expression",
    "parse",
    "parse_template_string",
    "to_text",
    "walk",
]


class ExpressionError(ValueError):
    """The text is not a valid ARM expression; `position` is the 0-based offset inside the brackets."""

    def __init__(self, message: str, position: int):
        super().__init__(f"{message} at offset {position}")
        self.reason = message
        self.position = position


@dataclass(frozen=True)
class Literal:
    value: str | int | float | bool | None


@dataclass(frozen=True)
class Call:
    name: str  # "concat", or "namespace.member" for user-defined functions
    args: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class Property:
    target: Expr
    name: str


@dataclass(frozen=True)
class Index:
    target: Expr
    index: Expr


Expr = Literal | Call | Property | Index

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<number>-?\d+(?:\.\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[().,\[\]])
    """,
    re.VERBOSE,
)
_KEYWORDS: dict[str, bool | None] = {"true": True, "false": False, "null": None}


@dataclass(frozen=True)
class _Token:
    kind: str  # string, number, name, punct, end
    text: str
    position: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            if text[position] == "'":
                raise ExpressionError("unterminated string literal", position)
            raise ExpressionError(f"unexpected character {text[position]!r}", position)
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(_Token(kind, match.group(), position))
        position = match.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokenize(text)
        self.at = 0

    def peek(self) -> _Token:
        return self.tokens[self.at]

    def take(self) -> _Token:
        token = self.tokens[self.at]
        if token.kind != "end":
            self.at += 1
        return token

    def expect(self, text: str) -> _Token:
        token = self.take()
        if token.text != text or token.kind not in ("punct",):
            shown = repr(token.text) if token.kind != "end" else "end of expression"
            raise ExpressionError(f"expected {text!r}, found {shown}", token.position)
        return token

    def parse_all(self) -> Expr:
        expr = self.expression()
        token = self.peek()
        if token.kind != "end":
            raise ExpressionError(f"unexpected {token.text!r} after the expression", token.position)
        return expr

    def expression(self) -> Expr:
        expr = self.primary()
        while True:
            token = self.peek()
            if token.text == "." and token.kind == "punct":
                self.take()
                name = self.take()
                if name.kind != "name":
                    raise ExpressionError("expected a property name after '.'", name.position)
                expr = Property(expr, name.text)
            elif token.text == "[" and token.kind == "punct":
                self.take()
                expr = Index(expr, self.expression())
                self.expect("]")
            else:
                return expr

    def primary(self) -> Expr:
        token = self.take()
        if token.kind == "string":
            return Literal(token.text[1:-1].replace("''", "'"))
        if token.kind == "number":
            return Literal(float(token.text) if "." in token.text else int(token.text))
        if token.kind == "name":
            return self.call_or_keyword(token)
        shown = repr(token.text) if token.kind != "end" else "end of expression"
        raise ExpressionError(f"expected a function call or a literal, found {shown}", token.position)

    def call_or_keyword(self, first: _Token) -> Expr:
        name = first.text
        after = self.peek()
        if after.text == "." and self.tokens[self.at + 1].kind == "name" and self.tokens[self.at + 2].text == "(":
            self.take()
            name = f"{name}.{self.take().text}"
        if self.peek().text != "(":
            if name.lower() in _KEYWORDS:
                return Literal(_KEYWORDS[name.lower()])
            raise ExpressionError(f"{name!r} is not a function call (missing '(')", first.position)
        self.take()
        args: list[Expr] = []
        if self.peek().text == ")":
            self.take()
            return Call(name, ())
        while True:
            args.append(self.expression())
            token = self.take()
            if token.text == ")":
                return Call(name, tuple(args))
            if token.text != ",":
                shown = repr(token.text) if token.kind != "end" else "end of expression"
                raise ExpressionError(
                    f"expected ',' or ')' in the arguments of {name}(), found {shown}", token.position
                )


def parse(body: str) -> Expr:
    """Parse the text between the outer brackets of an ARM expression."""
    return _Parser(body).parse_all()


def expression_body(value: str) -> str | None:
    """The text inside "[...]" when a JSON string is an expression; None for a literal (or "[[" escape)."""
    if len(value) >= 2 and value.startswith("[") and value.endswith("]") and not value.startswith("[["):
        return value[1:-1]
    return None


def parse_template_string(value: str) -> Expr | None:
    """The parsed expression of a template string, or None when the string is a literal."""
    body = expression_body(value)
    return None if body is None else parse(body)


_BROKEN = re.compile(r"^\[(?!\[)\s*[A-Za-z_][\w.]*\s*\(")


def looks_like_broken_expression(value: str) -> bool:
    """A string that opens like an expression but does not close: ARM silently treats it as a literal."""
    return bool(_BROKEN.match(value)) and not value.endswith("]")


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of the tree, parents before children."""
    yield expr
    if isinstance(expr, Call):
        for arg in expr.args:
            yield from walk(arg)
    elif isinstance(expr, Property):
        yield from walk(expr.target)
    elif isinstance(expr, Index):
        yield from walk(expr.target)
        yield from walk(expr.index)


def to_text(expr: Expr) -> str:
    """The canonical text of a tree (without the outer brackets); parse(to_text(e)) == e."""
    if isinstance(expr, Literal):
        value = expr.value
        if isinstance(value, str):
            return "'" + value.replace("'", "''") + "'"
        if value is None or isinstance(value, bool):
            return {None: "null", True: "true", False: "false"}[value]
        return repr(value)
    if isinstance(expr, Call):
        return f"{expr.name}({', '.join(to_text(a) for a in expr.args)})"
    if isinstance(expr, Property):
        return f"{to_text(expr.target)}.{expr.name}"
    return f"{to_text(expr.target)}[{to_text(expr.index)}]"
