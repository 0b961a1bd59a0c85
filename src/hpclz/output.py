"""The result envelope every command returns, and its JSON form.

The envelope's top-level keys are a contract (tests/test_output_contract.py): scripts parse them.
Add fields inside `result`, never at the top level, without bumping ENVELOPE_VERSION.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from hpclz import __version__
from hpclz.errors import ExitCode
from hpclz.findings import Finding

ENVELOPE_VERSION = "1"
ENVELOPE_KEYS = (
    "envelope_version",
    "hpclz_version",
    "command",
    "ok",
    "exit_code",
    "result",
    "findings",
    "errors",
)


class ErrorEntry(BaseModel):
    code: str
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    path: str | None = None


class Envelope(BaseModel):
    envelope_version: str = ENVELOPE_VERSION
    hpclz_version: str = __version__
    command: str
    ok: bool
    exit_code: int
    result: dict[str, Any] = Field(default_factory=dict)
    findings: list[Finding] = Field(default_factory=list)
    errors: list[ErrorEntry] = Field(default_factory=list)

    @classmethod
    def for_error(cls, command: str, exit_code: ExitCode, errors: list[ErrorEntry]) -> Envelope:
        return cls(command=command, ok=False, exit_code=int(exit_code), errors=errors)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=False)
