from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.services.verify import VerifyOutcome


def verify(
    config: Path = typer.Argument(..., help="Landing-zone config (YAML)."),
    partition: str | None = typer.Option(None, "--partition", "-p", help="Slurm partition (default: the config's)."),
    nodes: str | None = typer.Option(None, "--nodes", "-w", help="Only these nodes, a Slurm hostlist: gpu[001-016]."),
    nccl: bool = typer.Option(False, "--nccl", help="Also run all-reduce: ring pairs of nodes, then all nodes."),
    drain: bool = typer.Option(
        False, "--drain", help="Drain failing nodes (reason 'hpclz: ...'); resume nodes hpclz drained that now pass."
    ),
    junit: Path | None = typer.Option(None, "--junit", help="Write a JUnit XML report here, for CI."),
    plot: Path | None = typer.Option(None, "--plot", help="Write a bandwidth plot here."),
    local: bool = typer.Option(False, "--local", help="Check this machine only, without Slurm."),
    slurm_conf: Path | None = typer.Option(None, "--slurm-conf", help="slurm.conf to use (default: $SLURM_CONF)."),
    budget: int | None = typer.Option(
        None, "--budget", min=10, help="Seconds each node may take (default: twice verify.check_timeout_seconds)."
    ),
    work_dir: Path | None = typer.Option(
        None, "--work-dir", help="Folder for job scripts and per-node results; must be shared with the nodes."
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Check every node through Slurm, name the failing ones and why; optionally drain them."""
    with guarded("verify", output):
        from hpclz.services.verify import VerifyOptions, write_artifacts
        from hpclz.services.verify import verify as run_verify

        outcome = run_verify(
            VerifyOptions(
                config=config,
                partition=partition,
                nodes=nodes,
                nccl=nccl,
                drain=drain,
                local=local,
                slurm_conf=slurm_conf,
                work_dir=work_dir,
                node_budget_s=budget,
            )
        )
        write_artifacts(outcome.report, junit=junit, plot=plot)
        finish("verify", output, outcome.exit_code, outcome.payload(), [], lambda out: _human(out, outcome))


def _human(out: Console, outcome: VerifyOutcome) -> None:
    """One line per node, never wrapped: people read it, and CI logs get grepped for the node name."""
    report = outcome.report
    styles = {"pass": "green", "warn": "yellow", "fail": "bold red", "not_measured": "dim"}
    width = max((len(n.node) for n in report.nodes), default=4)
    for node in report.nodes:
        status = node.status.value
        notes = report.bad_nodes.get(node.node) or [
            c.message for c in node.checks if c.status.value in ("warn", "not_measured") and c.message
        ]
        out.print(f"{node.node:<{width}}  [{styles[status]}]{status:<12}[/] {notes[0] if notes else ''}".rstrip())
        for note in notes[1:]:
            out.print(f"{'':<{width}}  {'':<12} {note}")
        for check in node.failures():
            if check.fix:
                out.print(f"{'':<{width}}  {'':<12} [dim]fix ({check.check_id}):[/] {check.fix}")
    for c in report.collectives:
        bw = max(c.points, key=lambda p: p.size_bytes).busbw_gbps if c.points else None
        figure = f"{bw:.3g} GB/s busbw" if bw is not None else "no result"
        out.print(
            f"{c.name} ({c.backend}, {c.ranks} ranks): [{styles[c.status.value]}]{c.status.value}[/] {figure} {c.message}"
        )
    if report.drained:
        out.print(f"drained: {', '.join(report.drained)}")
    if report.resumed:
        out.print(f"resumed: {', '.join(report.resumed)}")
    bad = len(report.bad_nodes)
    mark = "[red]✗[/]" if outcome.exit_code else "[green]✓[/]"
    out.print(f"{mark} {len(report.nodes) - bad} of {len(report.nodes)} nodes passed in {report.duration_s:.1f} s")
    if outcome.work_dir:
        out.print(f"[dim]per-node results: {outcome.work_dir}[/]")
