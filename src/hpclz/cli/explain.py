from __future__ import annotations

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded
from hpclz.errors import ExitCode, HpclzError


def explain(
    rule_id: str = typer.Argument(
        "", metavar="ID", help="Rule ID, e.g. HPCLZ-CMP-010; or a document a message names, e.g. docs/patching.md."
    ),
    list_all: bool = typer.Option(False, "--list", help="List every rule's ID, severity and title."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Explain a rule: why it matters, where the fact comes from, and how to fix what it reports; or print a
    document a message names (e.g. docs/patching.md), from the copy hpclz ships."""
    with guarded("explain", output):
        from hpclz.cli.views import explain as view
        from hpclz.services.explain import ExplainOptions, doc_page, every_rule, is_doc
        from hpclz.services.explain import explain as run_explain

        if list_all:
            finish(every_rule(), output, view.show_list)
        if not rule_id:
            raise HpclzError("name a rule ID (hpclz explain HPCLZ-CMP-010), or pass --list", exit_code=ExitCode.USAGE)
        if is_doc(rule_id):
            finish(doc_page(ExplainOptions(rule_id)), output, view.show_doc)
        finish(run_explain(ExplainOptions(rule_id)), output, view.show)
