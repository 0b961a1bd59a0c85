"""Secret fingerprints: state can tell that a secret's value changed without holding the value or anything
that gives it back.

A fingerprint is scrypt(value, salt) with a random salt per secret (RFC 7914; n=2**14, r=8, p=1: ~16 MiB
and tens of milliseconds per guess), optionally keyed first with HMAC-SHA256 by a pepper from
HPCLZ_SECRET_PEPPER, which never enters state. See docs/state.md for the threat model.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

from pydantic import BaseModel

PEPPER_ENV = "HPCLZ_SECRET_PEPPER"
_N, _R, _P = 2**14, 8, 1


class SecretFingerprint(BaseModel):
    salt: str
    digest: str
    peppered: bool = False


def _pepper() -> bytes | None:
    raw = os.environ.get(PEPPER_ENV)
    return raw.encode() if raw else None


def _digest(value: str, salt: bytes, pepper: bytes | None) -> str:
    material = hmac.new(pepper, value.encode(), hashlib.sha256).digest() if pepper else value.encode()
    return base64.b64encode(hashlib.scrypt(material, salt=salt, n=_N, r=_R, p=_P, dklen=32)).decode()


def fingerprint(value: str) -> SecretFingerprint:
    salt = secrets.token_bytes(16)
    pepper = _pepper()
    return SecretFingerprint(
        salt=base64.b64encode(salt).decode(), digest=_digest(value, salt, pepper), peppered=pepper is not None
    )


def same_value(recorded: SecretFingerprint, value: str) -> bool | None:
    """True or False; None when it cannot be told (the fingerprint was peppered and no pepper is set now)."""
    pepper = _pepper()
    if recorded.peppered and pepper is None:
        return None
    if not recorded.peppered:
        pepper = None
    actual = _digest(value, base64.b64decode(recorded.salt), pepper)
    return hmac.compare_digest(actual, recorded.digest)
