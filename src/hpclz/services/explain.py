"""`hpclz explain ID`: a rule's documentation, read from the installed package (no docs/ folder needed); and
`hpclz explain docs/patching.md`: a document a message names, from the copy the package ships (package_data)."""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field

from hpclz.errors import ExitCode, HpclzError
from hpclz.output import CommandResult, ResultBody

if TYPE_CHECKING:
    from hpclz.rules.base import Rule


class RuleDoc(ResultBody):
    id: str
    severity: str
    title: str
    why: str
    fix: str


class RuleList(ResultBody):
    rules: list[RuleDoc]


def _doc(rule: type[Rule[Any]]) -> RuleDoc:
    return RuleDoc(
        id=rule.id,
        severity=rule.severity.value,
        title=rule.title,
        why=inspect.cleandoc(rule.__doc__ or ""),
        fix=rule.fix,
    )


@dataclass(frozen=True)
class ExplainOptions:
    rule_id: str  # any case, e.g. hpclz-cmp-010


def explain(opts: ExplainOptions) -> CommandResult[RuleDoc]:
    from hpclz.registry import all_rules

    rule_id = opts.rule_id
    rules = {rule.id: rule for rule in all_rules()}
    wanted = rule_id.strip().upper()
    if wanted not in rules:
        close = difflib.get_close_matches(wanted, list(rules), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else "; `hpclz explain --list` shows every rule"
        raise HpclzError(f"no rule {rule_id!r}{hint}", exit_code=ExitCode.USAGE)
    return CommandResult(command="explain", payload=_doc(rules[wanted]))


class DocPage(ResultBody):
    path: str = Field(description="As messages name it: docs/patching.md.")
    location: str = Field(description="Where this installation keeps it.")
    text: str


def is_doc(name: str) -> bool:
    return name.startswith("docs/") or name.endswith(".md")


def doc_page(opts: ExplainOptions) -> CommandResult[DocPage]:
    """The shipped copy of the docs/ document (or bare file name ending .md) `opts.rule_id` names; only files in the docs
    folder."""
    from hpclz.package_data import docs_dir

    name = opts.rule_id

    root = docs_dir().resolve()
    relative = name.strip().removeprefix("docs/")
    relative = relative if relative.endswith((".md", ".json")) else f"{relative}.md"
    target = (root / relative).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        shipped = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
        close = difflib.get_close_matches(relative, shipped, n=1, cutoff=0.6)
        hint = f"; did you mean docs/{close[0]}?" if close else f"; shipped: {', '.join(shipped)}"
        raise HpclzError(f"no document {name!r}{hint}", exit_code=ExitCode.USAGE)
    page = DocPage(path=f"docs/{relative}", location=str(target), text=target.read_text(encoding="utf-8"))
    return CommandResult(command="explain", payload=page)


def every_rule() -> CommandResult[RuleList]:
    from hpclz.registry import all_rules

    docs = [_doc(rule) for rule in sorted(all_rules(), key=lambda r: r.id)]
    return CommandResult(command="explain", payload=RuleList(rules=docs))
