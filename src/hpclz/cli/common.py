"""What every command shares: output format, error handling, printing the envelope."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import TYPE_CHECKING, NoReturn

import typer

from hpclz.errors import ConfigError, ExitCode, HpclzError

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import BodyT, CommandResult


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


_VERBOSE = {"level": 0}


def set_verbose(level: int) -> None:
    """`-v`: hpclz's own log lines on stderr; `-vv`: the Azure SDK's HTTP logging and tracebacks too (hpclz.logs)."""
    from hpclz.logs import set_level

    _VERBOSE["level"] = level
    set_level(level)


def is_verbose() -> bool:
    return _VERBOSE["level"] >= 1


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
