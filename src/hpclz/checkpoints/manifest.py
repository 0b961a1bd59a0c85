"""The checkpoint manifest: what `hpclz checkpoints manifest` writes and `verify` compares against.

A manifest lists the SHA-256 and size of every blob under a prefix. Anyone who can overwrite a checkpoint can
also overwrite an unsigned manifest, so it is protected twice where the config asks: an HMAC-SHA256 signature
with a key the attacker does not hold (`manifest_key: ${env:NAME}`), and version-level immutability on the
container (`immutable: true`), under which an overwrite makes a new version and the sealed one stays readable.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from hpclz.errors import ExitCode, HpclzError

MANIFEST_NAME = "hpclz-manifest.json"
FORMAT: Literal["hpclz-checkpoint-manifest/1"] = "hpclz-checkpoint-manifest/1"
SIGNATURE_SCHEME = "hmac-sha256:"


class ManifestEntry(BaseModel):
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)


class Manifest(BaseModel):
    format: Literal["hpclz-checkpoint-manifest/1"] = FORMAT
    container: str
    prefix: str
    created_at: datetime
    files: dict[str, ManifestEntry]
    signature: str | None = None

    def body(self) -> bytes:
        """The signed bytes: everything but the signature, in one canonical form."""
        data = self.model_dump(mode="json", exclude={"signature"})
        return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()

    def signed(self, key: bytes) -> Manifest:
        return self.model_copy(update={"signature": SIGNATURE_SCHEME + _mac(key, self.body())})

    def signature_valid(self, key: bytes) -> bool:
        if not self.signature or not self.signature.startswith(SIGNATURE_SCHEME):
            return False
        return hmac.compare_digest(self.signature.removeprefix(SIGNATURE_SCHEME), _mac(key, self.body()))

    def to_text(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def _mac(key: bytes, body: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def parse_manifest(text: str, where: str) -> Manifest:
    try:
        return Manifest.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(document)"
        raise HpclzError(
            f"{where}: not an hpclz checkpoint manifest ({field}: {first['msg']})", exit_code=ExitCode.FAILED
        ) from None


def normalise_prefix(prefix: str) -> str:
    """A prefix is a folder: `run1` covers `run1/...` but never `run10/...`."""
    stripped = prefix.strip("/")
    return f"{stripped}/" if stripped else ""


def manifest_blob(prefix: str) -> str:
    return normalise_prefix(prefix) + MANIFEST_NAME


def is_manifest(name: str) -> bool:
    """Manifests of this and nested prefixes are not checkpoints: sealing a sub-folder must not break its parent."""
    return name == MANIFEST_NAME or name.endswith("/" + MANIFEST_NAME)


class Comparison(BaseModel):
    modified: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    unexpected: list[str] = Field(default_factory=list)
    matched: int = 0

    @property
    def clean(self) -> bool:
        return not (self.modified or self.missing or self.unexpected)


def compare(expected: dict[str, ManifestEntry], found: dict[str, ManifestEntry]) -> Comparison:
    result = Comparison()
    for name in sorted(expected.keys() | found.keys()):
        if name not in found:
            result.missing.append(name)
        elif name not in expected:
            result.unexpected.append(name)
        elif found[name] != expected[name]:
            result.modified.append(name)
        else:
            result.matched += 1
    return result
