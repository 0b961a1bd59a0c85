"""What every command shares: output format, error handling, printing the envelope."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import TYPE_CHECKING, NoReturn, TextIO

import typer

from hpclz.errors import ConfigError, ExitCode, HpclzError

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import BodyT, CommandResult


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


_VERBOSE = {"on": False}


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever sys.stderr is when a record comes, so a replaced (captured) stderr still gets it."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.hpclz = True

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def set_verbose(on: bool) -> None:
    """--verbose: log hpclz and the Azure SDK to stderr. Without it the SDK stays silent: its credential chain
    logs every failed sign-in attempt as a warning, which buries hpclz's one-line error."""
    _VERBOSE["on"] = on
    azure = logging.getLogger("azure")
    handler = next((h for h in logging.getLogger().handlers if getattr(h, "hpclz", False)), None)
    if on:
        if handler is None:
            handler = _StderrHandler()
            handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
            logging.getLogger().addHandler(handler)
        logging.getLogger().setLevel(logging.DEBUG)
        azure.propagate = True
    else:
        if handler is not None:
            logging.getLogger().removeHandler(handler)
        if not any(isinstance(h, logging.NullHandler) for h in azure.handlers):
            azure.addHandler(logging.NullHandler())
        azure.propagate = False


def is_verbose() -> bool:
    return _VERBOSE["on"]


OUTPUT_OPTION = typer.Option(
    OutputFormat.TEXT, "--output", "-o", metavar="text|json", help="text for people, json for scripts."
)


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    # emoji=False: rich reads ':100:' in 'lz.yaml:100:9' as an emoji code and would print a file position as 💯.
    return Console(stderr=stderr, highlight=False, soft_wrap=True, emoji=False)


def finish(
    result: CommandResult[BodyT], output: OutputFormat, view: Callable[[Console, CommandResult[BodyT]], None]
) -> NoReturn:
    """Print a service's result, as the JSON envelope or through the command's view, and exit with its code."""
    if output is OutputFormat.JSON:
        sys.stdout.write(result.envelope().to_json() + "\n")
    else:
        view(console(), result)
    raise typer.Exit(int(result.exit_code))


@contextmanager
def guarded(command: str, output: OutputFormat) -> Iterator[None]:
    """Turn user-facing errors into one line each (or a JSON envelope) and the right exit code."""
    try:
        yield
    except HpclzError as exc:
        _report(command, output, exc)
    except KeyboardInterrupt:
        sys.stderr.write("hpclz: interrupted\n")
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None


def _report(command: str, output: OutputFormat, exc: HpclzError) -> NoReturn:
    if output is OutputFormat.JSON:
        from hpclz.output import Envelope, ErrorEntry

        if isinstance(exc, ConfigError):
            errors = [ErrorEntry.model_validate(p.as_dict()) for p in exc.problems]
        else:
            errors = [ErrorEntry(code=type(exc).__name__, message=str(exc))]
        sys.stdout.write(Envelope.for_error(command, exc.exit_code, errors).to_json() + "\n")
    else:
        lines = [p.one_line() for p in exc.problems] if isinstance(exc, ConfigError) else [str(exc)]
        for line in lines:
            sys.stderr.write(f"error: {line}\n")
    raise typer.Exit(int(exc.exit_code))
