"""The command line: parse arguments, call a service, print its typed result. Nothing else."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import typer

from hpclz import __version__
from hpclz.cli.table import COMMANDS, GROUPS, Command, command_named
from hpclz.errors import ExitCode


def _typer() -> typer.Typer:
    return typer.Typer(
        name="hpclz",
        help="Azure landing zones for HPC and AI training clusters: validate, render, plan, deploy, verify.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )


app = _typer()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hpclz {__version__}")
        raise typer.Exit(0)


def _root(
    _version_flag: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
    verbose: int = typer.Option(
        0,
        "--verbose",
        "-v",
        count=True,
        help="Log what hpclz reads and calls to stderr; twice (-vv) adds the Azure SDK's HTTP logging (sign-in "
        "attempts, requests; secrets redacted) and tracebacks.",
    ),
) -> None:
    """Azure landing zones for HPC and AI training clusters."""
    from hpclz.cli.common import set_verbose

    set_verbose(verbose)


def _register(root: typer.Typer, commands: tuple[Command, ...] = COMMANDS) -> None:
    """The root's options and the commands and groups of hpclz.cli.table, in its order (`hpclz --help` lists
    them so)."""
    root.callback()(_root)
    wanted = {c.group for c in commands}
    groups = {
        g.name: typer.Typer(name=g.name, help=g.help, no_args_is_help=True, rich_markup_mode=None)
        for g in GROUPS
        if g.name in wanted
    }
    for command in commands:
        if command.group is None:
            root.command(name=command.name)(command.parse)
        else:
            groups[command.group].command(name=command.words[-1])(command.parse)
    for name, group in groups.items():
        root.add_typer(group, name=name)


_register(app)


def _readable(command: Any) -> Any:
    """An argument's metavar (CONFIG, ID) already says what it is; typer would add its Python type (`<str>`)."""
    for param in getattr(command, "params", []):
        if param.param_type_name == "argument" and param.metavar and hasattr(param, "display_type_rich"):
            param.display_type_rich = lambda **_: None
    for sub in (getattr(command, "commands", None) or {}).values():
        _readable(sub)
    return command


def command_tree(first: str | None = None) -> Any:
    """The click command tree typer builds from the app: what parses a command line, and what docs/commands.md
    describes.

    With `first`, the word a command line starts with: where it names a command or group of the table, the tree
    holds the root and that one only. typer builds a click command, with every parameter's type, for each command
    of an app before it reads the arguments (typer/main.py get_command -> get_group -> get_command_from_info per
    command), about 4 % of `hpclz validate`'s instructions for the 20 commands no one asked for; a line that
    starts otherwise (`--help`, an option, a typo that click suggests a command for) gets the whole tree."""
    chosen = tuple(c for c in COMMANDS if c.words[0] == first)
    if not chosen:
        return _readable(typer.main.get_command(app))
    one = _typer()
    _register(one, chosen)
    return _readable(typer.main.get_command(one))


def main(argv: list[str] | None = None) -> int:
    """Entry point: click's usage errors exit 64, not 2 (2 means "changes present" for plan).

    Ctrl-C, and an aborted prompt (click turns Ctrl-C or end of input at a prompt into typer.Abort), exit
    130 as documented in docs/exit-codes.md. typer.Abort is a RuntimeError, so it is caught before the
    catch-all that reports internal errors.
    """
    if sys.stdout is None or sys.stdout.closed:  # started with standard output closed: nowhere to report to
        _say(sys.stderr, "error: standard output is closed; hpclz has nowhere to write its result\n")
        return int(ExitCode.FAILED)
    _lenient_streams()
    args = list(argv if argv is not None else sys.argv[1:])
    command = command_tree(args[0] if args else None)
    try:
        result = command.main(args=terraform_booleans(args), prog_name="hpclz", standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe shows here, not as a traceback at exit
    except typer.TyperException as exc:  # click's UsageError, BadParameter, ... (typer vendors click)
        if wants_json(args):
            _envelope(command_named(args), ExitCode.USAGE, "usage", exc.format_message())
        _show_usage_error(exc)
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        sys.stderr.write("hpclz: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except typer.Abort:
        sys.stderr.write("hpclz: aborted\n")
        return int(ExitCode.INTERRUPTED)
    except OSError as exc:  # the output could not be written (ENOSPC, EPIPE), a full disk at the lock, ...
        if os.environ.get("HPCLZ_DEBUG"):
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        _say(sys.stderr, f"error: {where}{exc.strerror or exc}\n")
        _discard_stdout()
        return int(ExitCode.FAILED)
    except Exception as exc:
        if os.environ.get("HPCLZ_DEBUG"):
            raise
        message = f"internal error: {type(exc).__name__}: {exc} (HPCLZ_DEBUG=1 shows the traceback)"
        if wants_json(args):
            _envelope(command_named(args), ExitCode.FAILED, "internal_error", message)
        sys.stderr.write(f"hpclz: {message}\n")
        return int(ExitCode.FAILED)
    return int(result) if isinstance(result, int) else 0


BOOLEAN_FLAGS = ("--refresh",)
TRUE_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def terraform_booleans(args: list[str]) -> list[str]:
    """`--refresh=false` as terraform spells it (https://developer.hashicorp.com/terraform/cli/commands/plan#refresh-false)
    becomes typer's `--no-refresh`; `--refresh=true` is `--refresh`. typer's flags take no value, and an option that
    takes one would swallow CONFIG after a bare `--refresh`. Arguments after `--` are left as they are."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        name, equals, value = arg.partition("=")
        if equals and name in BOOLEAN_FLAGS:
            if value.lower() not in TRUE_WORDS:
                raise typer.BadParameter(f"{arg}: {name} takes true or false")
            arg = name if TRUE_WORDS[value.lower()] else f"--no-{name[2:]}"
        out.append(arg)
    return out


def wants_json(args: list[str]) -> bool:
    """Did the command line ask for `--output json`? Read from the raw arguments, since a usage error means
    click never got as far as parsing the option."""
    for i, arg in enumerate(args):
        if arg in ("-o", "--output") and i + 1 < len(args) and args[i + 1] == "json":
            return True
        if arg in ("--output=json", "-ojson"):
            return True
    return False


def _envelope(command: str, code: ExitCode, kind: str, message: str) -> None:
    from hpclz.output import Envelope, ErrorEntry

    sys.stdout.write(Envelope.for_error(command, code, [ErrorEntry(code=kind, message=message)]).to_json() + "\n")


def _show_usage_error(exc: typer.TyperException) -> None:
    """Click's own rendering (usage line, hint, message) where the error has one; its message otherwise."""
    show = getattr(exc, "show", None)
    if callable(show):
        show()
    else:
        sys.stderr.write(f"Error: {exc.format_message()}\n")


def _say(stream: Any, text: str) -> None:
    """Write a last word where it may still go; a stream that fails too is left alone."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        stream.write(text)
        stream.flush()


def _lenient_streams() -> None:
    """Characters the terminal's encoding lacks (PYTHONIOENCODING=ascii) print escaped instead of failing."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors="backslashreplace")


def _discard_stdout() -> None:
    """Drop what could not be written, so that the exit's own flush does not fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout = Path(os.devnull).open("w", encoding="utf-8")  # noqa: SIM115 - lives until exit


def run() -> None:
    sys.exit(main())
