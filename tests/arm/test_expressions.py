"""The ARM expression tokenizer and parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpclz.arm.expressions import (
    Call,
    Expr,
    ExpressionError,
    Index,
    Literal,
    Property,
    expression_body,
    looks_like_broken_expression,
    parse,
    parse_template_string,
    to_text,
    walk,
)


def test_nested_calls_properties_and_indexes() -> None:
    expr = parse("reference(resourceId('Microsoft.Network/virtualNetworks', variables('vnet'))).subnets[0].id")
    assert expr == Property(
        Index(
            Property(
                Call(
                    "reference",
                    (
                        Call(
                            "resourceId",
                            (Literal("Microsoft.Network/virtualNetworks"), Call("variables", (Literal("vnet"),))),
                        ),
                    ),
                ),
                "subnets",
            ),
            Literal(0),
        ),
        "id",
    )


def test_literals_numbers_and_keywords() -> None:
    assert parse("createArray(1, -2, 3.5, true, false, null)") == Call(
        "createArray", (Literal(1), Literal(-2), Literal(3.5), Literal(True), Literal(False), Literal(None))
    )


def test_doubled_quote_escapes_a_quote() -> None:
    assert parse("concat('it''s', '')") == Call("concat", (Literal("it's"), Literal("")))


def test_user_defined_namespace_function() -> None:
    assert parse("hpclz.name('x')") == Call("hpclz.name", (Literal("x"),))


def test_whitespace_between_tokens() -> None:
    assert parse("  concat ( 'a' ,\n'b' ) ") == Call("concat", (Literal("a"), Literal("b")))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("concat('a'", "expected ',' or ')'"),
        ("concat('a", "unterminated string"),
        ("concat('a'))", "unexpected ')'"),
        ("parameters('a')[0", "expected ']'"),
        ("variables", "not a function call"),
        ("", "expected a function call or a literal"),
        ("concat('a',)", "expected a function call or a literal"),
        ("concat('a' 'b')", "expected ',' or ')'"),
        ("parameters('a').", "expected a property name"),
        ("concat(#)", "unexpected character '#'"),
    ],
)
def test_malformed_expressions_raise_with_a_reason(body: str, reason: str) -> None:
    """The reason names what was expected, so a user can fix the expression without a parser manual."""
    with pytest.raises(ExpressionError) as raised:
        parse(body)
    assert reason in str(raised.value)


def test_template_strings_versus_literals() -> None:
    assert expression_body("[parameters('a')]") == "parameters('a')"
    assert expression_body("[[literal]") is None
    assert expression_body("plain") is None
    assert parse_template_string("not [an] expression") is None
    assert parse_template_string("[variables('v')]") == Call("variables", (Literal("v"),))


def test_broken_expression_detection() -> None:
    assert looks_like_broken_expression("[concat('a', 'b')")
    assert not looks_like_broken_expression("[concat('a', 'b')]")
    assert not looks_like_broken_expression("[[concat('a'")
    assert not looks_like_broken_expression("[draft] notes (v2")


def test_walk_visits_every_node() -> None:
    names = [n.name for n in walk(parse("if(equals(parameters('a'), 1), concat('x'), null)")) if isinstance(n, Call)]
    assert names == ["if", "equals", "parameters", "concat"]


_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda s: s.lower() not in ("true", "false", "null")
)
_literals = st.one_of(
    st.text(max_size=12).map(Literal),
    st.integers(min_value=-(10**9), max_value=10**9).map(Literal),
    st.sampled_from([0.5, 1.25, -3.75]).map(Literal),
    st.sampled_from([True, False, None]).map(Literal),
)
_exprs: st.SearchStrategy[Expr] = st.recursive(
    _literals,
    lambda inner: st.one_of(
        st.builds(Call, _names, st.lists(inner, max_size=3).map(tuple)),
        st.builds(Property, inner, _names),
        st.builds(Index, inner, inner),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_exprs)
def test_round_trip_through_text(expr: Expr) -> None:
    assert parse(to_text(expr)) == expr


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("()[].,' ab1-_\n\"#")), max_size=40) | st.text(max_size=40))
def test_random_text_never_crashes(text: str) -> None:
    try:
        parse(text)
    except ExpressionError as error:
        assert 0 <= error.position <= len(text)
