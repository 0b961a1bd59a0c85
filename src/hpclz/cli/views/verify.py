"""`hpclz verify` for people: the per-node table (hpclz.verify.report), drains, and the tally."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.services.verify import VerifyOutcome


def show(out: Console, result: CommandResult[VerifyOutcome]) -> None:
    from hpclz.verify.dispatch import NOT_TESTED
    from hpclz.verify.report import print_report

    outcome = result.payload
    report = outcome.report
    print_report(out, report)
    if report.drained:
        out.print(f"drained: {', '.join(report.drained)}")
    if report.resumed:
        out.print(f"resumed: {', '.join(report.resumed)}")
    if outcome.outcome == "not_measured":
        _not_measured(out, result)
        return
    untested = sum(1 for n in report.nodes if any(c.check_id == NOT_TESTED for c in n.checks))
    passed = len(report.nodes) - len(report.bad_nodes) - untested
    mark = "[green]✓[/]" if result.ok else "[red]✗[/]"
    skipped = f", {untested} not tested" if untested else ""
    out.print(f"{mark} {passed} of {len(report.nodes)} nodes passed{skipped} in {report.duration_s:.1f} s")
    if outcome.work_dir:
        out.print(f"[dim]per-node results: {outcome.work_dir}[/]")


def _not_measured(out: Console, result: CommandResult[VerifyOutcome]) -> None:
    """Never "passed": on a machine without the GPU driver or a known SKU, silence is not health."""
    from hpclz.verify.model import Status

    checks = [c for n in result.payload.report.nodes for c in n.checks]
    missing = sum(1 for c in checks if c.status is Status.NOT_MEASURED)
    out.print(
        f"[yellow]?[/] not measured: {missing} of {len(checks)} checks could not be measured on this machine "
        f"and none failed; this is not a pass (exit {int(result.exit_code)})"
    )
