"""Budget rules (COST area): the estimate of hpclz.cost against the config's monthly ceiling."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.cost.estimate import estimate
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

WARN_SHARE = 0.8


class EstimateNearBudget(Rule[ConfigContext]):
    """A landing zone whose own estimate already takes most of its budget will overrun it in a busy month:
    the estimate counts only what it can price (retail list prices, partitions at budget.partition_hours),
    so the real bill is higher still. Above 100 % `hpclz deploy` refuses unless given --over-budget."""

    id = "HPCLZ-COST-010"
    severity = Severity.WARNING
    title = "Estimated monthly cost above 80 % of the budget"
    fix = (
        "Lower max_nodes or budget.partition_hours, choose smaller or spot sizes, or raise budget.monthly_usd; "
        "run `hpclz plan` to see the lines."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        budget = ctx.config.budget
        if budget is None:
            return
        est = estimate(ctx.config)
        share = est.total_usd / budget.monthly_usd
        if share <= WARN_SHARE:
            return
        bound = "at least " if est.unpriced else ""
        over = "; deploy refuses without --over-budget" if share > 1 else ""
        yield self.finding(
            ctx,
            ("budget", "monthly_usd"),
            f"estimated {bound}${est.total_usd:,.0f}/month is {share:.0%} of the ${budget.monthly_usd:,.0f} budget{over}",
        )


BUDGET_RULES = (EstimateNearBudget,)
