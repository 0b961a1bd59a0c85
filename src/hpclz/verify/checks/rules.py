"""The verify checks as hpclz.rules.base.Rule classes, generated from the stdlib check table.

One table (hpclz.verify.checks.core.CHECKS) is the single source of IDs, titles, fixes and docs; this module
gives the rule registry, docs/rules.md and `--suppress` the same view of them as of any other rule. It may
import pydantic; the node agent never imports it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from hpclz.config.source_map import SourceMap
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.verify.checks.core import CHECKS, FAIL, WARN, CheckSpec
from hpclz.verify.probes.facts import NodeFacts
from hpclz.verify.thresholds import Thresholds


@dataclass
class NodeContext:
    """What a verify rule sees: one node's readings and the thresholds for its SKU."""

    facts: NodeFacts
    thresholds: Thresholds
    source: SourceMap | None = None


class VerifyRule(Rule[NodeContext]):
    spec: ClassVar[CheckSpec]

    def check(self, ctx: NodeContext) -> Iterable[Finding]:
        outcome = self.spec.run(ctx.facts, ctx.thresholds)
        if outcome.status in (FAIL, WARN):
            level = Severity.ERROR if outcome.status == FAIL and self.severity is Severity.ERROR else Severity.WARNING
            yield self.finding(ctx, ("node", ctx.facts.node), outcome.message, severity=level)


def _rule_class(spec: CheckSpec) -> type[VerifyRule]:
    attrs: dict[str, Any] = {
        "id": spec.id,
        "severity": Severity(spec.severity),
        "title": spec.title,
        "fix": spec.fix,
        "spec": spec,
        "__doc__": spec.doc,
        "__module__": __name__,
    }
    return type("Rule_" + spec.id.replace("-", "_"), (VerifyRule,), attrs)


VERIFY_RULES: tuple[type[Rule[Any]], ...] = tuple(_rule_class(spec) for spec in CHECKS)
