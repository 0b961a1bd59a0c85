"""Secrets in VM custom data: decoded and scanned, because checkov's CKV_AZURE_45 cannot do it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hpclz.arm.expressions import ExpressionError, Literal, expression_body, parse, walk
from hpclz.arm.walk import iter_entries
from hpclz.findings import Finding, Severity
from hpclz.render.payload import unpack
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext

BOOT_PAYLOAD_KEYS = frozenset({"customData", "userData"})
SECRET_PATTERNS: dict[str, re.Pattern[str]] = {
    "a private key": re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
    "a storage account key": re.compile(r"AccountKey=[A-Za-z0-9+/=]{20,}"),
    "a SAS token": re.compile(r"[?&]sig=[A-Za-z0-9%+/=]{20,}"),
    "a password assignment": re.compile(
        r"""(?i)\b(?:password|passwd|pwd|client_secret)\b["']?\s*[:=]\s*["']?(?!\s|["']|\$|<|\{\{)[^\s"']{4,}"""
    ),
}


class CustomDataWithoutSecrets(Rule[TemplateContext]):
    """VM and scale-set customData/userData (cloud-init) must not carry secrets: userData is readable from the
    instance metadata service by every process on the node, customData is copied to the VM's disk
    (/var/lib/waagent/ovf-env.xml), and both are stored with the VM model (learn.microsoft.com/azure/virtual-machines/
    custom-data: "We advise not to store sensitive data in custom data"). The payload is base64 and gzip-compressed
    (cloud-init unpacks it: hpclz.render.payload), so it is decoded and unpacked before scanning for private keys,
    storage keys, SAS tokens and password assignments.
    Replaces checkov's CKV_AZURE_45, which runs its secret regexes on the undecoded base64 text and does not
    finish on a 45 KB cloud-init (see checkov-allowlist.yaml). arm-ttk has no custom-data test."""

    id = "HPCLZ-TPL-026"
    severity = Severity.ERROR
    title = "VM custom data contains a secret"
    fix = "Fetch the secret at boot with the node's managed identity (Key Vault) instead of embedding it."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        resources = ctx.template.get("resources")
        for path, payload in iter_entries(resources, _is_payload, ("resources",)):
            for text in _texts(payload):
                decoded = _decode(text)
                for kind, pattern in SECRET_PATTERNS.items():
                    match = pattern.search(decoded)
                    if match:
                        line = decoded.count("\n", 0, match.start()) + 1
                        yield self.finding(ctx, path, f"{path[-1]} line {line} holds {kind}")


def _is_payload(key: str, value: object) -> bool:
    return key in BOOT_PAYLOAD_KEYS and isinstance(value, str)


def _texts(payload: str) -> list[str]:
    """The literal text of a payload; for an expression ([base64('...')]) its string literals."""
    body = expression_body(payload)
    if body is None:
        return [payload]
    try:
        return [n.value for n in walk(parse(body)) if isinstance(n, Literal) and isinstance(n.value, str)]
    except ExpressionError:
        return [payload]


def _decode(text: str) -> str:
    """A payload as the VM reads it: base64, gunzipped when gzip (hpclz.render.payload); plain text (an
    expression's literal, already decoded) is scanned as it is."""
    unpacked = unpack(text)
    return unpacked.data.decode("utf-8", errors="replace") if unpacked is not None else text
