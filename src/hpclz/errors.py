"""The one user-facing error type and the exit codes every command shares."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes. Documented in docs/exit-codes.md; scripts rely on them."""

    OK = 0
    FAILED = 1  # the command ran and found a problem (failing findings, a failed deployment)
    CHANGES_PRESENT = 2  # only with `plan --detailed-exitcode`, as terraform does
    CONFIG_INVALID = 3  # the config could not be read or does not match the model
    STATE_LOCKED = 4  # another run holds the state lock
    AZURE_ERROR = 5  # Azure refused or failed a call
    VERIFY_FAILED = 6  # one or more nodes failed verification
    NOT_MEASURED = 7  # `verify --local`: no check failed, but some could not be measured on this machine
    USAGE = 64  # bad command-line usage (EX_USAGE); click's own 2 would clash with CHANGES_PRESENT
    INTERRUPTED = 130


class HpclzError(Exception):
    """An error the user can act on: printed as one line, never with a traceback."""

    exit_code: ExitCode = ExitCode.FAILED

    def __init__(self, message: str, *, exit_code: ExitCode | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class ConfigError(HpclzError):
    """The config file could not be parsed or does not match the model."""

    exit_code = ExitCode.CONFIG_INVALID

    def __init__(self, problems: list[ConfigProblem]):
        self.problems = problems
        super().__init__("\n".join(p.one_line() for p in problems))


class ConfigProblem:
    """One located problem in a config file."""

    def __init__(self, file: str, line: int, column: int, path: str, message: str, code: str):
        self.file = file
        self.line = line
        self.column = column
        self.path = printable(path)
        self.message = printable(message)
        self.code = code

    def one_line(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        return f"{where}: {self.path or '<root>'}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
        }


def printable(text: str) -> str:
    """Escape what a terminal would act on (newlines, ESC, bidi overrides): a problem is always one line, and a
    key or value from the config must not be able to rewrite the user's screen."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
