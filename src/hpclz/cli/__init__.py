"""The command line: parse arguments, call a service, print its typed result. Nothing else."""

from __future__ import annotations

import os
import sys

import typer

from hpclz import __version__
from hpclz.cli.deploy import deploy
from hpclz.cli.destroy import destroy
from hpclz.cli.init import init
from hpclz.cli.plan import plan
from hpclz.cli.prices import prices_app
from hpclz.cli.render import render
from hpclz.cli.schema import schema
from hpclz.cli.state import state_app
from hpclz.cli.validate import validate
from hpclz.cli.verify import verify
from hpclz.errors import ExitCode

app = typer.Typer(
    name="hpclz",
    help="Azure landing zones for HPC and AI training clusters: validate, render, plan, deploy, verify.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hpclz {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """Azure landing zones for HPC and AI training clusters."""


app.command()(validate)
app.command()(schema)
app.command()(init)
app.command()(deploy)
app.command()(destroy)
app.command()(render)
app.command()(plan)
app.command()(verify)
app.add_typer(state_app, name="state")
app.add_typer(prices_app, name="prices")


def main(argv: list[str] | None = None) -> int:
    """Entry point: click's usage errors exit 64, not 2 (2 means "changes present" for plan).

    Ctrl-C, and an aborted prompt (click turns Ctrl-C or end of input at a prompt into typer.Abort), exit
    130 as documented in docs/exit-codes.md. typer.Abort is a RuntimeError, so it is caught before the
    catch-all that reports internal errors.
    """
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv if argv is not None else sys.argv[1:], prog_name="hpclz", standalone_mode=False)
    except typer.TyperException as exc:  # click's UsageError, BadParameter, ... (typer vendors click)
        _show_usage_error(exc)
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        sys.stderr.write("hpclz: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except typer.Abort:
        sys.stderr.write("hpclz: aborted\n")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:
        if os.environ.get("HPCLZ_DEBUG"):
            raise
        sys.stderr.write(f"hpclz: internal error: {type(exc).__name__}: {exc} (HPCLZ_DEBUG=1 shows the traceback)\n")
        return int(ExitCode.FAILED)
    return int(result) if isinstance(result, int) else 0


def _show_usage_error(exc: typer.TyperException) -> None:
    """Click's own rendering (usage line, hint, message) where the error has one; its message otherwise."""
    show = getattr(exc, "show", None)
    if callable(show):
        show()
    else:
        sys.stderr.write(f"Error: {exc.format_message()}\n")


def run() -> None:
    sys.exit(main())
