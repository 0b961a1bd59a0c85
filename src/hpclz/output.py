"""What every command returns (CommandResult), and the JSON envelope it prints as.

Every service returns a CommandResult[T]: the command, its own typed payload T, findings, errors and the
exit code, decided once by the service. The CLI hands it to one printer: the JSON envelope below, or the
command's human view in hpclz.cli.views.

The envelope's top-level keys are a contract (tests/test_output_contract.py): scripts parse them.
Add fields inside `result`, never at the top level, without bumping ENVELOPE_VERSION.
"""

from __future__ import annotations

import json
from typing import Any, Generic, TypeVar

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


class ResultBody(BaseModel):
    """A command's own result: what goes under `result` in the envelope (override json_body to reshape it)."""

    def json_body(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


BodyT = TypeVar("BodyT", bound=ResultBody)


class CommandResult(BaseModel, Generic[BodyT]):
    """The one result type every service returns and both printers (human, JSON) take."""

    command: str
    payload: BodyT
    findings: list[Finding] = Field(default_factory=list)
    errors: list[ErrorEntry] = Field(default_factory=list)
    exit_code: ExitCode = ExitCode.OK

    @property
    def ok(self) -> bool:
        """Success, including `plan --detailed-exitcode`'s "changes present" (terraform's 2)."""
        return self.exit_code in (ExitCode.OK, ExitCode.CHANGES_PRESENT)

    def envelope(self) -> Envelope:
        return Envelope(
            command=self.command,
            ok=self.ok,
            exit_code=int(self.exit_code),
            result=self.payload.json_body(),
            findings=self.findings,
            errors=self.errors,
        )
