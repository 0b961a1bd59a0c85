"""The rule framework shared by config validators, template lint and verify checks.

A rule is a small class: a stable ID, a severity, a one-line title, a fix hint. It returns findings;
it never raises or prints (a crashing rule is turned into a finding by the runner).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from hpclz.config.source_map import PathPart, SourceMap, display_path
from hpclz.findings import Finding, Severity

RULE_ID = re.compile(r"^HPCLZ-(ORG|IDN|NET|CMP|STO|SEC|PRT|MON|MNT|COST|TPL|VFY|ZON)-\d{3}$")
# docs/rules.md exists only in a checkout; `hpclz explain` reads the same text from the installed package.
EXPLAIN_COMMAND = "hpclz explain"


class Located(Protocol):
    """Anything a rule inspects that can say where a path sits in a source file."""

    @property
    def source(self) -> SourceMap | None: ...


Ctx = TypeVar("Ctx", bound=Located)


class Rule(ABC, Generic[Ctx]):
    id: ClassVar[str]
    severity: ClassVar[Severity]
    title: ClassVar[str]
    fix: ClassVar[str]
    # A finding that says the same thing on every run (a report, not a problem): text output shows it only
    # with --verbose; JSON output always carries it.
    repeats: ClassVar[bool] = False

    @classmethod
    def area(cls) -> str:
        return cls.id.split("-")[1]

    @classmethod
    def docs(cls) -> str:
        return f"{EXPLAIN_COMMAND} {cls.id}"

    @abstractmethod
    def check(self, ctx: Ctx) -> Iterable[Finding]:
        """Yield a finding per problem; yield nothing when all is well."""

    def finding(
        self,
        ctx: Ctx,
        path: Sequence[PathPart],
        message: str,
        *,
        severity: Severity | None = None,
        fix: str | None = None,
    ) -> Finding:
        source = ctx.source
        line = column = None
        file = None
        shown = ".".join(str(p) for p in path)
        if source is not None:
            position = source.locate(path)
            line, column, file = position.line, position.column, source.file
            shown = display_path(path, source.data)
        return Finding(
            rule_id=self.id,
            severity=severity or self.severity,
            title=self.title,
            message=message,
            path=shown,
            file=file,
            line=line,
            column=column,
            fix=fix or self.fix,
            docs=self.docs(),
            repeats=self.repeats,
        )


def run_rules(
    rules: Iterable[type[Rule[Any]]], ctx: Any, suppress: Iterable[str] = ()
) -> tuple[list[Finding], list[Finding]]:
    """Run every rule; return (reported, suppressed). A rule that crashes becomes an error finding."""
    silenced = {s.upper() for s in suppress}
    reported: list[Finding] = []
    suppressed: list[Finding] = []
    for rule_cls in rules:
        rule = rule_cls()
        try:
            found = list(rule.check(ctx))
        except Exception as exc:  # a bug in one rule must not hide the others' findings
            found = [
                Finding(
                    rule_id=rule_cls.id,
                    severity=Severity.ERROR,
                    title=rule_cls.title,
                    message=f"rule crashed: {type(exc).__name__}: {exc}",
                    fix="This is a bug in hpclz; please report it. Suppress the rule by ID to continue.",
                    docs=rule_cls.docs(),
                )
            ]
        for f in found:
            (suppressed if f.rule_id in silenced else reported).append(f)
    reported.sort(key=lambda f: (-f.severity.rank, f.line or 0, f.rule_id))
    return reported, suppressed
