"""`hpclz explain` for people: a rule's title, why it matters, and its fix; or the list of every rule."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.output import CommandResult
    from hpclz.services.explain import DocPage, RuleDoc, RuleList


def show(out: Console, result: CommandResult[RuleDoc]) -> None:
    doc = result.payload
    out.print(f"{doc.id} ({doc.severity}): {doc.title}\n", markup=False)
    if doc.why:
        out.print(doc.why + "\n", markup=False)
    out.print(f"Fix: {doc.fix}", markup=False)
    out.print(f"Silence it with --suppress {doc.id} or the config's suppress: list.", markup=False)


def show_doc(out: Console, result: CommandResult[DocPage]) -> None:
    out.print(f"{result.payload.path} ({result.payload.location})\n", markup=False, highlight=False)
    out.print(result.payload.text, markup=False, highlight=False)


def show_list(out: Console, result: CommandResult[RuleList]) -> None:
    for d in result.payload.rules:
        out.print(f"{d.id}  {d.severity:<7}  {d.title}", markup=False)
