"""`hpclz state show|unlock|forget|adopt` for people."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.services.state import AdoptResult, ForgetResult, StateShowResult, UnlockResult


def show_unlock(out: Console, result: CommandResult[UnlockResult]) -> None:
    body = result.payload
    if body.holder is None:
        out.print(f"state {body.location} is not locked; nothing to do")
    else:
        out.print(f"released the lock on {body.location}; it was {body.holder.describe()}")


def show(out: Console, command: CommandResult[StateShowResult]) -> None:
    result = command.payload
    out.print(f"state: {result.location} ({result.backend})")
    out.print(f"lock: {result.lock.describe() if result.lock else 'not locked'}")
    doc = result.state
    if doc is None:
        out.print("no state recorded yet (nothing deployed)")
        return
    updated = doc.updated_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    out.print(f"serial {doc.serial}, lineage {doc.lineage}, updated {updated} by hpclz {doc.hpclz_version}")
    out.print(f"config hash: {doc.config_hash or '-'}; previous versions kept: {len(result.history)}")
    out.print(f"deployments ({len(doc.deployments)}):")
    for d in doc.deployments.values():
        out.print(escape(f"  {d.name}  {d.status.value}  {d.component}  template {d.template_hash[:12]}"))
    out.print(f"resources ({len(doc.resources)}):")
    for r in doc.resources:
        out.print(f"  {escape(r.type)}  {escape(r.name)}  [dim]{escape(r.id)}[/]")
    if doc.app_role_assignments:
        out.print(f"app role assignments in CycleCloud's Entra app ({len(doc.app_role_assignments)}):")
        for a in doc.app_role_assignments:
            out.print(escape(f"  {a.app_role}  group {a.principal_id}  [{a.id}]"), highlight=False)
    if doc.outputs:
        out.print("outputs:")
        for key, value in doc.outputs.items():
            out.print(escape(f"  {key} = {value}"))


def show_forget(out: Console, command: CommandResult[ForgetResult]) -> None:
    result = command.payload
    for rid in result.forgotten:
        out.print(f"forgot {escape(rid)} (left in Azure); state serial {result.serial}")


def show_adopt(out: Console, command: CommandResult[AdoptResult]) -> None:
    result = command.payload
    out.print(
        f"adopted {escape(result.adopted)} into {escape(result.deployment)}; state serial {result.serial}\n"
        "Run `hpclz plan` to review every property deploy will change on it; destroy deletes it with the zone."
    )
