"""`hpclz render`: load and validate the config, then hpclz.deploy.rendering renders, gates and writes it."""

from __future__ import annotations

from hpclz.config.loader import load_config
from hpclz.deploy.rendering import TEMPLATE_FORMATS, RenderOptions, RenderResult, checked_format, render_files
from hpclz.errors import ExitCode
from hpclz.findings import Severity
from hpclz.output import CommandResult
from hpclz.services.validate import check_config

__all__ = ["TEMPLATE_FORMATS", "RenderOptions", "RenderResult", "render"]


def render(opts: RenderOptions) -> CommandResult[RenderResult]:
    checked_format(opts.template_format)  # before anything is read or written
    loaded = load_config(opts.config)
    reported, _ = check_config(loaded)
    # Info findings belong to `validate`; render shows only what needs attention.
    findings = [f for f in reported if f.severity.at_least(Severity.WARNING)]
    result = render_files(loaded, findings, opts)
    code = ExitCode.OK if result.ok else ExitCode.FAILED
    return CommandResult(command="render", payload=result, findings=result.findings, exit_code=code)
