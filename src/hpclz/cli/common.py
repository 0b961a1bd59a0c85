"""What every command shares: output format, error handling, printing the envelope."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from hpclz.errors import ConfigError, ExitCode, HpclzError

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.findings import Finding


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


SEVERITY_STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}
OUTPUT_OPTION = typer.Option(OutputFormat.TEXT, "--output", "-o", help="text for people, json for scripts.")


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def finish(
    command: str,
    output: OutputFormat,
    exit_code: ExitCode,
    payload: dict[str, Any],
    findings: list[Finding],
    human: Callable[[Console], None],
    errors: list[dict[str, Any]] | None = None,
) -> NoReturn:
    if output is OutputFormat.JSON:
        from hpclz.output import Envelope, ErrorEntry

        envelope = Envelope(
            command=command,
            ok=exit_code in (ExitCode.OK, ExitCode.CHANGES_PRESENT),
            exit_code=int(exit_code),
            result=payload,
            findings=findings,
            errors=[ErrorEntry.model_validate(e) for e in errors or []],
        )
        sys.stdout.write(envelope.to_json() + "\n")
    else:
        human(console())
    raise typer.Exit(int(exit_code))


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


def print_findings(out: Console, findings: list[Finding]) -> None:
    from rich.markup import escape

    for f in findings:
        # Paths such as compute.partitions[gpu] would otherwise be eaten as rich markup.
        where = escape(f.location() or f.path)
        out.print(
            f"{where}: [{SEVERITY_STYLES[f.severity.value]}]{f.severity.value}[/] [bold]{f.rule_id}[/] {escape(f.message)}"
            + (f" [dim]({escape(f.path)})[/]" if f.path and f.line else "")
        )
        if f.fix:
            out.print(f"    [dim]fix:[/] {escape(f.fix)}")
