"""Rules never raise: arbitrary user text in the free-form fields they parse yields a finding or nothing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hpclz.rules.config.identity import ssh_key_problem
from hpclz.rules.exposure import covers, port_spans


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_ssh_key_check_never_raises(text: str) -> None:
    result = ssh_key_problem(text, ["ssh-rsa", "ssh-ed25519"], 2048)
    assert result is None or isinstance(result, str)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30) | st.text(alphabet="0123456789-,* ²", max_size=30))
def test_port_ranges_parse_without_raising(text: str) -> None:
    for low, high in port_spans(text):
        assert low >= 0 and high >= 0
    assert covers(text, 22) in (True, False)


def test_port_spans_and_coverage() -> None:
    assert port_spans("22") == [(22, 22)]
    assert port_spans("20-25, 3389") == [(20, 25), (3389, 3389)]
    assert port_spans("*") == [(0, 65535)]
    assert port_spans("[parameters('sshPort')]") == []
    assert covers("1-1024", 22) and covers("*", 3389)
    assert not covers("80,443", 22) and not covers("", 22)
