"""The verify report for people and machines: per-node table (rich), JSON, JUnit XML, bandwidth plot.

The plot is one self-contained HTML file with an inline SVG per collective run (bus bandwidth against message
size, log scale, threshold line): it opens offline. A PNG is written beside it only when matplotlib happens to
be installed; hpclz does not depend on it.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from hpclz.errors import HpclzError
from hpclz.verify.model import CheckResult, CollectiveResult, NodeReport, Status, VerifyReport

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

STYLE = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "bold red", Status.NOT_MEASURED: "dim"}


def _value(value: float | str | None, unit: str) -> str:
    if value is None:
        return ""
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return f"{text} {unit}".strip()


def measured_vs_threshold(check: CheckResult) -> str:
    measured, threshold = _value(check.measured, check.unit), _value(check.threshold, check.unit)
    if measured and threshold:
        return f"{measured} / {threshold}"
    return measured or threshold


def summary_table(report: VerifyReport) -> Table:
    from rich.table import Table

    table = Table(title="verify: nodes", show_lines=False)
    for column in ("node", "sku", "status", "pass", "warn", "fail", "not measured", "first failure"):
        table.add_column(column)
    for node in report.nodes:
        counts = {s: sum(1 for c in node.checks if c.status is s) for s in Status}
        first = node.failures()[0] if node.failures() else None
        table.add_row(
            node.node,
            node.sku or "?",
            f"[{STYLE[node.status]}]{node.status.value}[/]",
            str(counts[Status.PASS]),
            str(counts[Status.WARN]),
            str(counts[Status.FAIL]),
            str(counts[Status.NOT_MEASURED]),
            f"{first.check_id} {first.message}" if first else "",
        )
    return table


def node_table(report: VerifyReport, *, everything: bool = False) -> Table:
    """One row per check per node; by default only checks that did not pass."""
    from rich.table import Table

    table = Table(title="verify: checks" + ("" if everything else " that did not pass"))
    for column in ("node", "check", "title", "status", "measured / threshold", "message"):
        table.add_column(column, overflow="fold")
    for node in report.nodes:
        for check in node.checks:
            if everything or check.status is not Status.PASS:
                table.add_row(
                    node.node,
                    check.check_id,
                    check.title,
                    f"[{STYLE[check.status]}]{check.status.value}[/]" + (" (suppressed)" if check.suppressed else ""),
                    measured_vs_threshold(check),
                    check.message,
                )
    return table


def collectives_table(report: VerifyReport) -> Table:
    from rich.table import Table

    table = Table(title="verify: all-reduce")
    for column in ("run", "nodes", "ranks", "backend", "largest size", "busbw GB/s", "threshold", "status"):
        table.add_column(column)
    for run in report.collectives:
        top = run.largest()
        table.add_row(
            run.name,
            ",".join(run.nodes),
            str(run.ranks),
            run.backend,
            _size(top.size_bytes) if top else "",
            f"{top.busbw_gbps:.1f}" if top else "",
            f"{run.threshold_busbw_gbps:g}" if run.threshold_busbw_gbps is not None else "",
            f"[{STYLE[run.status]}]{run.status.value}[/]",
        )
    return table


def workload_table(report: VerifyReport) -> Table:
    """The training proof: one row per run, then its verdicts (hpclz verify --workload)."""
    from rich.table import Table

    table = Table(title="verify: training proof (Megatron-LM GPT)")
    for column in ("run", "nodes", "GPUs", "iterations", "step s", "tokens/s/GPU", "TFLOP/s/GPU", "MFU", "loss"):
        table.add_column(column)
    for run in report.workload.runs if report.workload else []:
        loss = (
            f"{run.loss_first:.3g} -> {run.loss_last:.3g}"
            if run.loss_first is not None and run.loss_last is not None
            else ""
        )
        table.add_row(
            run.name,
            ",".join(run.nodes),
            str(run.gpus),
            str(run.iterations),
            f"{run.step_s:.3g}" if run.step_s is not None else "",
            f"{run.tokens_per_s_per_gpu:,.0f}" if run.tokens_per_s_per_gpu is not None else "",
            f"{run.tflops_per_gpu:.3g}" if run.tflops_per_gpu is not None else "",
            f"{run.mfu:.1%}" if run.mfu is not None else "",
            loss,
        )
    return table


def failure_reason(check: CheckResult) -> str:
    """`<ID> <title>: <message>`, how a failing check is named in bad_nodes and the `bad node` lines."""
    return f"{check.check_id} {check.title}: {check.message}" if check.message else f"{check.check_id} {check.title}"


def bad_nodes(nodes: list[NodeReport]) -> dict[str, list[str]]:
    """VerifyReport.bad_nodes: each node with a failing check, and why."""
    return {n.node: [failure_reason(c) for c in n.failures()] for n in nodes if n.failures()}


def print_report(out: Console, report: VerifyReport, *, everything: bool = False) -> None:
    out.print(summary_table(report))
    if everything or any(c.status is not Status.PASS for n in report.nodes for c in n.checks):
        out.print(node_table(report, everything=everything))
    if report.collectives:
        out.print(collectives_table(report))
    if report.workload:
        out.print(workload_table(report))
        for check in report.workload.checks:
            if everything or check.status is not Status.PASS:
                out.print(
                    f"[{STYLE[check.status]}]{check.status.value}[/] {check.check_id} {check.title}: {check.message}"
                )
    for node, reasons in sorted(report.bad_nodes.items()):
        out.print(f"[bold red]bad node[/] {node}: {'; '.join(reasons)}")
    for rack, why in sorted(report.slow_racks.items()):
        out.print(f"[bold red]slow rack[/] {rack}: {why}")


def to_json(report: VerifyReport) -> str:
    return report.model_dump_json(indent=2)


def junit_xml(report: VerifyReport) -> str:
    """One testsuite per node (a testcase per check) and one for the collectives; warnings go to system-out."""
    root = ET.Element("testsuites", name="hpclz verify", time=f"{report.duration_s:.3f}")
    for node in report.nodes:
        suite = _suite(root, f"node {node.node}", node.duration_s)
        for check in node.checks:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"verify.{node.node}",
                name=f"{check.check_id} {check.title}",
                time=f"{check.duration_s:.6f}",
            )
            _outcome(case, check.status, check.message, measured_vs_threshold(check))
    if report.collectives:
        suite = _suite(root, "collectives", 0.0)
        for run in report.collectives:
            case = ET.SubElement(suite, "testcase", classname="verify.collectives", name=run.name, time="0")
            _outcome(case, run.status, run.message, ",".join(run.nodes))
    if report.workload:
        suite = _suite(root, "training proof", 0.0)
        for index, check in enumerate(report.workload.checks):
            case = ET.SubElement(
                suite,
                "testcase",
                classname="verify.workload",
                name=f"{check.check_id} {index}: {check.title}",
                time="0",
            )
            _outcome(case, check.status, check.message, measured_vs_threshold(check))
    for suite in root:
        cases = list(suite)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _suite(root: ET.Element, name: str, seconds: float) -> ET.Element:
    return ET.SubElement(root, "testsuite", name=name, time=f"{seconds:.3f}")


def _outcome(case: ET.Element, status: Status, message: str, detail: str) -> None:
    if status is Status.FAIL:
        ET.SubElement(case, "failure", message=message, type="verify").text = detail
    elif status is Status.NOT_MEASURED:
        ET.SubElement(case, "skipped", message=message)
    elif status is Status.WARN:
        ET.SubElement(case, "system-out").text = f"warning: {message}"


def _size(n: int) -> str:
    for unit, scale in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def bandwidth_svg(run: CollectiveResult, width: int = 640, height: int = 360) -> str:
    """Bus bandwidth (GB/s) against message size (log2 axis) for one run, with the threshold as a dashed line."""
    left, right, top, bottom = 64, 16, 32, 48
    points = sorted(run.points, key=lambda p: p.size_bytes)
    sizes = [p.size_bytes for p in points] or [1]
    lo, hi = math.log2(min(sizes)), math.log2(max(sizes))
    peak = max([p.busbw_gbps for p in points] + [run.threshold_busbw_gbps or 0.0, 1e-9]) * 1.1

    def x(size: int) -> float:
        span = hi - lo
        return left + (width - left - right) * ((math.log2(size) - lo) / span if span else 0.5)

    def y(bw: float) -> float:
        return height - bottom - (height - top - bottom) * bw / peak

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(run.name)} bus bandwidth">',
        f'<text x="{left}" y="20" font-size="14">{escape(run.name)}: {escape(", ".join(run.nodes))} '
        f"({run.ranks} ranks, {escape(run.backend)}, {run.status.value})</text>",
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>',
        f'<text x="{width / 2}" y="{height - 8}" font-size="12" text-anchor="middle">message size</text>',
        f'<text x="14" y="{height / 2}" font-size="12" transform="rotate(-90 14 {height / 2})" '
        'text-anchor="middle">bus bandwidth (GB/s)</text>',
    ]
    for tick in (0.0, peak / 2, peak / 1.1):
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" font-size="10" text-anchor="end">{tick:.3g}</text>')
    for p in points:
        parts.append(
            f'<text x="{x(p.size_bytes):.1f}" y="{height - bottom + 14}" font-size="10" '
            f'text-anchor="middle">{_size(p.size_bytes)}</text>'
        )
    if run.threshold_busbw_gbps is not None:
        ty = y(run.threshold_busbw_gbps)
        parts.append(
            f'<line class="threshold" x1="{left}" y1="{ty:.1f}" x2="{width - right}" y2="{ty:.1f}" '
            'stroke="red" stroke-dasharray="6 4"/>'
        )
    coords = " ".join(f"{x(p.size_bytes):.1f},{y(p.busbw_gbps):.1f}" for p in points)
    parts.append(f'<polyline class="busbw" fill="none" stroke="steelblue" stroke-width="2" points="{coords}"/>')
    for p in points:
        parts.append(
            f'<circle cx="{x(p.size_bytes):.1f}" cy="{y(p.busbw_gbps):.1f}" r="3" fill="steelblue">'
            f"<title>{p.size_bytes} B: {p.busbw_gbps:.4g} GB/s busbw, {p.algbw_gbps:.4g} GB/s algbw</title></circle>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def throughput_svg(report: VerifyReport, width: int = 640, bar: int = 22) -> str:
    """The training proof's tokens/s per GPU, one bar per run, so a slow node stands out at a glance."""
    runs = [r for r in (report.workload.runs if report.workload else []) if r.tokens_per_s_per_gpu]
    top = max((r.tokens_per_s_per_gpu or 0.0 for r in runs), default=0.0)
    height = 40 + bar * len(runs)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">',
        '<text x="10" y="18" font-size="13">training proof: tokens/s per GPU</text>',
    ]
    for row, run in enumerate(runs):
        y, length = 28 + row * bar, (width - 260) * (run.tokens_per_s_per_gpu or 0.0) / top
        parts.append(f'<text x="10" y="{y + 14}" font-size="11">{escape(run.name)}</text>')
        parts.append(f'<rect x="160" y="{y}" width="{length:.1f}" height="{bar - 6}" fill="#4a7ab5"/>')
        parts.append(f'<text x="{165 + length:.1f}" y="{y + 14}" font-size="11">{run.tokens_per_s_per_gpu:,.0f}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def plot_html(report: VerifyReport) -> str:
    body = [bandwidth_svg(run) for run in report.collectives if run.points]
    if report.workload and any(r.tokens_per_s_per_gpu for r in report.workload.runs):
        body.append(throughput_svg(report))
    body = body or ["<p>No all-reduce and no training run was measured.</p>"]
    title = f"hpclz verify: bus bandwidth{f' ({escape(report.landing_zone)})' if report.landing_zone else ''}"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>\n'
        f"<body><h1>{title}</h1>\n" + "\n".join(f"<figure>{svg}</figure>" for svg in body) + "\n</body></html>\n"
    )


def write_plot(report: VerifyReport, html_path: Path) -> list[Path]:
    """Write the HTML plot, and a PNG beside it when matplotlib is installed; return what was written."""
    written = [_write(html_path, plot_html(report))]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return written
    runs = [r for r in report.collectives if r.points]
    if not runs:
        return written
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for run in runs:
        pts = sorted(run.points, key=lambda p: p.size_bytes)
        ax.plot([p.size_bytes for p in pts], [p.busbw_gbps for p in pts], marker="o", label=run.name)
        if run.threshold_busbw_gbps is not None:
            ax.axhline(run.threshold_busbw_gbps, linestyle="--", color="red", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.legend()
    png = html_path.with_suffix(".png")
    fig.savefig(png, dpi=100)
    plt.close(fig)
    written.append(png)
    return written


def write_junit(report: VerifyReport, path: Path) -> Path:
    return _write(path, junit_xml(report))


def _write(path: Path, text: str) -> Path:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise HpclzError(f"cannot write {path}: {exc.strerror}") from None
    return path
