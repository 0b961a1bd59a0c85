"""`hpclz explain ID`: a rule's documentation, read from the installed package (no docs/ folder needed)."""

from __future__ import annotations

import difflib
import inspect

from pydantic import BaseModel

from hpclz.errors import ExitCode, HpclzError


class RuleDoc(BaseModel):
    id: str
    severity: str
    title: str
    why: str
    fix: str


def explain(rule_id: str) -> RuleDoc:
    from hpclz.registry import all_rules

    rules = {rule.id: rule for rule in all_rules()}
    rule = rules.get(rule_id.strip().upper())
    if rule is None:
        close = difflib.get_close_matches(rule_id.strip().upper(), list(rules), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else "; `hpclz explain --list` shows every rule"
        raise HpclzError(f"no rule {rule_id!r}{hint}", exit_code=ExitCode.USAGE)
    return RuleDoc(
        id=rule.id,
        severity=rule.severity.value,
        title=rule.title,
        why=inspect.cleandoc(rule.__doc__ or ""),
        fix=rule.fix,
    )


def every_rule() -> list[RuleDoc]:
    from hpclz.registry import all_rules

    return [explain(rule.id) for rule in sorted(all_rules(), key=lambda r: r.id)]
