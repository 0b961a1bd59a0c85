"""The ARM template function list the unknown-function rule checks against."""

from __future__ import annotations

from hpclz.arm.functions import is_known_function, returns_secrets


def test_names_match_without_case_as_arm_does() -> None:
    assert is_known_function("resourceId") and is_known_function("RESOURCEID") and is_known_function("utcNow")


def test_list_functions_are_known_and_return_secrets() -> None:
    assert is_known_function("listConnectionStrings")
    assert returns_secrets("listKeys") and not returns_secrets("length")


def test_user_functions_need_their_namespace_and_member() -> None:
    declared = frozenset({"hpclz.name"})
    assert is_known_function("hpclz.name", declared)
    assert not is_known_function("hpclz.other", declared)
    assert not is_known_function("concatenate", declared)
    assert not returns_secrets("hpclz.listKeys")
