"""The SSH key check decodes the key body, as Azure does, instead of trusting the prefix."""

from __future__ import annotations

import base64
import struct

import pytest

from hpclz.rules.config.identity import ssh_key_problem
from tests.rules.cases import preset_doc

ACCEPTED = ["ssh-rsa", "ssh-ed25519"]


def _wire(*fields: bytes) -> str:
    return base64.b64encode(b"".join(struct.pack(">I", len(f)) + f for f in fields)).decode()


def _rsa(bits: int) -> str:
    modulus = (1 << (bits - 1)) | 1
    return "ssh-rsa " + _wire(b"ssh-rsa", b"\x01\x00\x01", b"\x00" + modulus.to_bytes(bits // 8, "big")) + " me@host"


def _problem(text: str) -> str | None:
    return ssh_key_problem(text, ACCEPTED, 2048)


def test_preset_ed25519_key_is_accepted() -> None:
    assert _problem(preset_doc("energy")["identity"]["ssh_public_key"]) is None


@pytest.mark.parametrize("bits", [2048, 4096])
def test_rsa_keys_of_2048_bits_or_more_are_accepted(bits: int) -> None:
    assert _problem(_rsa(bits)) is None


def test_short_rsa_key_is_refused_with_its_size() -> None:
    assert "1024-bit" in (_problem(_rsa(1024)) or "")


def test_prefix_that_lies_about_the_body_is_caught() -> None:
    body = preset_doc("energy")["identity"]["ssh_public_key"].split()[1]
    assert "ssh-ed25519 key" in (_problem(f"ssh-rsa {body} me") or "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ecdsa-sha2-nistp256 " + _wire(b"ecdsa-sha2-nistp256", b"nistp256", b"\x04" * 65), "Azure accepts only"),
        ("ssh-dss " + _wire(b"ssh-dss"), "Azure accepts only"),
        ("ssh-ed25519 not*base64!", "damaged base64"),
        ("ssh-ed25519 " + base64.b64encode(b"\x00\x00\x00\xffshort").decode(), "damaged base64"),
        ("ssh-ed25519 " + _wire(b"ssh-ed25519", b"\x01" * 16), "malformed Ed25519"),
        ("justonefield", "not an OpenSSH public key"),
    ],
)
def test_unusable_keys_are_refused(text: str, expected: str) -> None:
    assert expected in (_problem(text) or "")
