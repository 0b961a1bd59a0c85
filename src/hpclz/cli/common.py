"""What every command shares: output format, error handling, printing the envelope."""

from __future__ import annotations

import logging
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
_VERBOSE = {"on": False}


class _StderrHandler(logging.StreamHandler):
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


def shown(findings: list[Finding]) -> tuple[list[Finding], list[str]]:
    """The findings text output prints, and the IDs of repeating reports it leaves to --verbose."""
    if is_verbose():
        return findings, []
    from hpclz.registry import all_rules

    repeating = {rule.id for rule in all_rules() if rule.repeats}
    hidden = sorted({f.rule_id for f in findings if f.rule_id in repeating})
    return [f for f in findings if f.rule_id not in repeating], hidden


def hidden_note(hidden: list[str]) -> str:
    return f"{', '.join(hidden)} not shown: it reports the same on every run; --verbose shows it" if hidden else ""


OUTPUT_OPTION = typer.Option(
    OutputFormat.TEXT, "--output", "-o", metavar="text|json", help="text for people, json for scripts."
)


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
) -> NoReturn:
    if output is OutputFormat.JSON:
        from hpclz.output import Envelope

        envelope = Envelope(
            command=command,
            ok=exit_code in (ExitCode.OK, ExitCode.CHANGES_PRESENT),
            exit_code=int(exit_code),
            result=payload,
            findings=findings,
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

    findings, hidden = shown(findings)
    for f in findings:
        # Paths such as compute.partitions[gpu] would otherwise be eaten as rich markup.
        where = escape(f.location() or f.path)
        out.print(
            f"{where}: [{SEVERITY_STYLES[f.severity.value]}]{f.severity.value}[/] [bold]{f.rule_id}[/] {escape(f.message)}"
            + (f" [dim]({escape(f.path)})[/]" if f.path and f.line else "")
        )
        if f.fix:
            out.print(f"    [dim]fix:[/] {escape(f.fix)}")
    if hidden:
        out.print(f"[dim]{escape(hidden_note(hidden))}[/]")
