"""The verify checks as hpclz.rules.base.Rule classes, generated from the stdlib tables.

Two tables are the single source of IDs, titles, fixes and docs: the node checks (hpclz.verify.checks.CHECKS,
judged from one node's readings) and the outcomes the head node observes (hpclz.verify.checks.outcomes.OUTCOMES:
no result, unreachable, not tested, job never ran, slow ring pair). This module gives the rule registry,
docs/rules.md and `--suppress` the same view of them as of any other rule. It may import pydantic; the node
agent never imports it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from hpclz.config.source_map import SourceMap
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.verify.checks import CHECKS
from hpclz.verify.checks.core import FAIL, WARN, CheckSpec
from hpclz.verify.checks.outcomes import OUTCOMES, OutcomeSpec
from hpclz.verify.model import NodeReport, Status
from hpclz.verify.probes.facts import NodeFacts
from hpclz.verify.thresholds import Thresholds


@dataclass
class NodeContext:
    """What a verify rule sees: one node's readings and the thresholds for its SKU, or what the head node
    recorded for it (`report`, from Slurm dispatch and the ring pairs), or both."""

    facts: NodeFacts | None = None
    thresholds: Thresholds | None = None
    source: SourceMap | None = None
    report: NodeReport | None = None


class _VerifyRuleBase(Rule[NodeContext]):
    def _finding(self, ctx: NodeContext, node: str, failed: bool, message: str) -> Finding:
        level = Severity.ERROR if failed and self.severity is Severity.ERROR else Severity.WARNING
        return self.finding(ctx, ("node", node), message, severity=level)

    # A node check not measured says nothing about the node; an outcome "not tested" is itself the news.
    counted: ClassVar[tuple[Status, ...]] = (Status.FAIL, Status.WARN)

    def recorded(self, ctx: NodeContext) -> Iterable[Finding]:
        """Findings from the results already recorded under this rule's ID in the node's report."""
        if ctx.report is None:
            return
        for result in ctx.report.checks:
            if result.check_id == self.id and result.status in self.counted:
                yield self._finding(ctx, ctx.report.node, result.status is Status.FAIL, result.message)


class VerifyRule(_VerifyRuleBase):
    """A node check: judged from the node's readings when the context has them, else from its report."""

    spec: ClassVar[CheckSpec]

    def check(self, ctx: NodeContext) -> Iterable[Finding]:
        if ctx.facts is None:
            yield from self.recorded(ctx)
            return
        outcome = self.spec.run(ctx.facts, ctx.thresholds or Thresholds(ctx.facts.sku))
        if outcome.status in (FAIL, WARN):
            yield self._finding(ctx, ctx.facts.node, outcome.status == FAIL, outcome.message)


class OutcomeRule(_VerifyRuleBase):
    """An outcome the head node observes (no result, unreachable, ...): found in the node's report."""

    spec: ClassVar[OutcomeSpec]
    counted = (Status.FAIL, Status.WARN, Status.NOT_MEASURED)

    def check(self, ctx: NodeContext) -> Iterable[Finding]:
        return self.recorded(ctx)


def _rule_class(spec: CheckSpec | OutcomeSpec, base: type[_VerifyRuleBase]) -> type[Rule[Any]]:
    attrs: dict[str, Any] = {
        "id": spec.id,
        "severity": Severity(spec.severity),
        "title": spec.title,
        "fix": spec.fix,
        "spec": spec,
        "__doc__": spec.doc,
        "__module__": __name__,
    }
    return type("Rule_" + spec.id.replace("-", "_"), (base,), attrs)


VERIFY_RULES: tuple[type[Rule[Any]], ...] = tuple(_rule_class(spec, VerifyRule) for spec in CHECKS) + tuple(
    _rule_class(spec, OutcomeRule) for spec in OUTCOMES
)
