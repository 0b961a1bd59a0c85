"""The landing zone's monthly spending ceiling, checked against hpclz's own estimate (hpclz.cost)."""

from __future__ import annotations

from pydantic import Field

from hpclz.config.base import StrictModel, policy
from hpclz.config.constraints import Number

# Azure bills VMs per hour and its pricing calculator counts 730 hours in a month (8760 / 12).
HOURS_PER_MONTH = 730


class Budget(StrictModel):
    """A monthly ceiling: `hpclz plan` warns above 80 % of it, `hpclz deploy` refuses above 100 %
    unless given --over-budget."""

    monthly_usd: Number = Field(
        gt=0, description="Monthly ceiling in US dollars (retail list prices).", json_schema_extra=policy("in_place")
    )
    partition_hours: Number = Field(
        default=HOURS_PER_MONTH,
        ge=0,
        le=HOURS_PER_MONTH,
        description="Hours a month each partition is assumed to run at max_nodes in the estimate; "
        "730 (the default) is the worst case, every node all month.",
        json_schema_extra=policy("in_place"),
    )
