"""`hpclz verify`: load the config, refuse unknown suppressions, then hpclz.verify.session runs and judges it."""

from __future__ import annotations

from pathlib import Path

from hpclz.config.loader import load_config
from hpclz.errors import ExitCode
from hpclz.output import CommandResult
from hpclz.services.validate import refuse_unknown_suppressions
from hpclz.verify.model import VerifyReport
from hpclz.verify.session import VerifyOptions, VerifyOutcome, run_verify

__all__ = ["VerifyOptions", "VerifyOutcome", "verify", "write_artifacts"]


def verify(opts: VerifyOptions) -> CommandResult[VerifyOutcome]:
    loaded = load_config(opts.config)
    refuse_unknown_suppressions(loaded, opts.suppress)
    outcome = run_verify(loaded, opts)
    code = {"failed": ExitCode.VERIFY_FAILED, "not_measured": ExitCode.NOT_MEASURED}.get(outcome.outcome, ExitCode.OK)
    return CommandResult(command="verify", payload=outcome, findings=outcome.findings, exit_code=code)


def write_artifacts(report: VerifyReport, *, junit: Path | None = None, plot: Path | None = None) -> None:
    """JUnit for CI, and the bandwidth plot (HTML with inline SVG), through hpclz.verify.report."""
    from hpclz.verify.report import write_junit, write_plot

    if junit is not None:
        write_junit(report, junit)
    if plot is not None:
        write_plot(report, plot)
