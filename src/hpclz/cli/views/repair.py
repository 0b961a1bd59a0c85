"""`hpclz nodes repair|incidents` for people."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.remediate.session import RepairResult


def show(out: Console, result: CommandResult[RepairResult]) -> None:
    body = result.payload
    for event in body.events:
        verb = "would" if event.dry_run else event.time[:19]
        step = f"{event.stage_from.value} -> {event.stage_to.value}"
        out.print(escape(f"{verb}  {event.incident}  {event.node}  {step}  {event.detail}"))
    width = max((len(i.node) for i in body.incidents), default=4)
    open_ = [i for i in body.incidents if i.open]
    for incident in sorted(body.incidents, key=lambda i: i.id):
        note = f"  ({incident.note})" if incident.note else ""
        plan = " -> ".join(incident.ladder) or "-"
        line = f"{incident.id}  {incident.node:<{width}}  {incident.stage.value:<9}  {incident.category or '-'}  {plan}{note}"
        out.print(escape(line))
    out.print(f"{len(open_)} open, {len(body.incidents) - len(open_)} closed incident(s)")
