"""`hpclz nodes roll|status` for people."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.services.nodes import NodesResult


def show(out: Console, result: CommandResult[NodesResult]) -> None:
    body = result.payload
    if body.command:
        verb = "would run" if body.dry_run else "ran"
        out.print(escape(f"{verb}: {body.command}"))
    width = max((len(n.name) for n in body.nodes), default=4)
    for node in body.nodes:
        reason = f"  ({node.reason})" if node.reason else ""
        out.print(escape(f"{node.name:<{width}}  {node.partition:<10}  {node.state:<12}  {node.phase.value}{reason}"))
    down = sum(1 for n in body.nodes if n.phase.value == "powered down")
    summary = f"{down} of {len(body.nodes)} node(s) powered down"
    if body.waited_s is not None:
        summary += f" after {body.waited_s:.0f} s"
    out.print(summary if result.ok else f"[red]{escape(summary)}[/]")
