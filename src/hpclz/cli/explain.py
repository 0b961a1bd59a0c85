from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded
from hpclz.errors import ExitCode, HpclzError

if TYPE_CHECKING:
    from rich.console import Console


def explain(
    rule_id: str = typer.Argument("", metavar="ID", help="Rule ID, e.g. HPCLZ-CMP-010."),
    list_all: bool = typer.Option(False, "--list", help="List every rule's ID, severity and title."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Explain a rule: why it matters, where the fact comes from, and how to fix what it reports."""
    with guarded("explain", output):
        from hpclz.services.explain import every_rule
        from hpclz.services.explain import explain as run_explain

        if list_all:
            docs = every_rule()

            def listing(out: Console) -> None:
                for d in docs:
                    out.print(f"{d.id}  {d.severity:<7}  {d.title}", markup=False)

            finish("explain", output, ExitCode.OK, {"rules": [d.model_dump() for d in docs]}, [], listing)
        if not rule_id:
            raise HpclzError("name a rule ID (hpclz explain HPCLZ-CMP-010), or pass --list", exit_code=ExitCode.USAGE)
        doc = run_explain(rule_id)

        def human(out: Console) -> None:
            out.print(f"{doc.id} ({doc.severity}): {doc.title}\n", markup=False)
            if doc.why:
                out.print(doc.why + "\n", markup=False)
            out.print(f"Fix: {doc.fix}", markup=False)
            out.print(f"Silence it with --suppress {doc.id} or the config's suppress: list.", markup=False)

        finish("explain", output, ExitCode.OK, doc.model_dump(), [], human)
