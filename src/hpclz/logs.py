"""Where log lines go, and the redaction each one passes through on its way.

`-v` shows hpclz's own lines (loggers under `hpclz`: what it reads, what it calls); `-vv` adds every other
library's, the Azure SDK's HTTP logging among them, and the tracebacks attached to records. Without either,
nothing is logged: the SDK's credential chain warns on every failed sign-in attempt, which would bury hpclz's
one-line error.

The Azure SDK's HttpLoggingPolicy already writes "REDACTED" for every header and query parameter outside its
allow-list (azure-core 1.41, azure/core/pipeline/policies/_universal.py, HttpLoggingPolicy._redact_header and
sanitize_url); request bodies are logged only by NetworkTraceLoggingPolicy with `logging_enable`, which hpclz
never sets. Redaction here is the second line: bearer tokens, `password=`/`"secret": ...`-shaped values, SAS
signatures and every secret value hpclz read at run time (`register_secret`) are replaced in the final text,
traceback included.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import TextIO

REDACTED = "REDACTED"
_SECRETS: set[str] = set()
_KEYS = (
    r"authorization|password|passwd|pwd|secret|client_secret|access_token|refresh_token|id_token|token"
    r"|api[-_]?key|account[-_]?key|accountkey|sharedaccesskey|x-ms-[a-z-]*key|sig|signature|connection[-_]?string"
)
_PATTERNS = (
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]+"),
    # key: value, key=value, "key": "value", 'key': 'value' (headers, query strings, JSON, Python reprs), the key
    # with any prefix (`adminPassword`, `x-ms-account-key`).
    re.compile(rf"""(?i)(["']?[\w-]*(?:{_KEYS})["']?\s*[:=]\s*["']?)(?!REDACTED)([^"'&\s,;}}\]]+)"""),
)
# Shorter values would redact ordinary words; a secret that short is refused by the config rules anyway.
MIN_SECRET = 6


def register_secret(value: str) -> None:
    """A secret read at run time (an environment variable, a Key Vault value): never printed in a log line."""
    if len(value) >= MIN_SECRET:
        _SECRETS.add(value)


def redact(text: str) -> str:
    for value in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


class _Formatter(logging.Formatter):
    def __init__(self, tracebacks: bool):
        super().__init__("%(levelname)s %(name)s: %(message)s")
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        if not self.tracebacks and (record.exc_info or record.exc_text or record.stack_info):
            record = logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None, "stack_info": None})
        return redact(super().format(record))


class _OwnLines(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.name == "hpclz" or record.name.startswith("hpclz.")


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever sys.stderr is when a record comes, so a replaced (captured) stderr still gets it."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.hpclz = True

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def set_level(level: int) -> None:
    """0: nothing; 1 (`-v`): hpclz's own lines; 2 (`-vv`): the SDK's and every library's too, with tracebacks."""
    root = logging.getLogger()
    azure = logging.getLogger("azure")
    for old in [h for h in root.handlers if getattr(h, "hpclz", False)]:
        root.removeHandler(old)
    if level >= 1:
        handler = _StderrHandler()
        handler.setFormatter(_Formatter(tracebacks=level >= 2))
        if level == 1:
            handler.addFilter(_OwnLines())
        root.addHandler(handler)
        root.setLevel(logging.DEBUG)
    else:
        root.setLevel(logging.WARNING)
    loud = level >= 2
    azure.propagate = loud
    if not loud and not any(isinstance(h, logging.NullHandler) for h in azure.handlers):
        azure.addHandler(logging.NullHandler())
    # At -v the SDK's loggers stay quiet at the source too: its HTTP policy builds no line it would not print.
    azure.setLevel(logging.NOTSET if loud else logging.WARNING)
