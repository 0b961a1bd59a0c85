"""`hpclz explain ID`: a rule's documentation, read from the installed package (no docs/ folder needed)."""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass

from hpclz.errors import ExitCode, HpclzError
from hpclz.output import CommandResult, ResultBody


class RuleDoc(ResultBody):
    id: str
    severity: str
    title: str
    why: str
    fix: str


class RuleList(ResultBody):
    rules: list[RuleDoc]


def _doc(rule: type) -> RuleDoc:
    return RuleDoc(
        id=rule.id,  # type: ignore[attr-defined]
        severity=rule.severity.value,  # type: ignore[attr-defined]
        title=rule.title,  # type: ignore[attr-defined]
        why=inspect.cleandoc(rule.__doc__ or ""),
        fix=rule.fix,  # type: ignore[attr-defined]
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


def every_rule() -> CommandResult[RuleList]:
    from hpclz.registry import all_rules

    docs = [_doc(rule) for rule in sorted(all_rules(), key=lambda r: r.id)]
    return CommandResult(command="explain", payload=RuleList(rules=docs))
