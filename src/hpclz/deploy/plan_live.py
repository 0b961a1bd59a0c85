"""What `hpclz plan` reads live when it reads Azure anyway (`--what-if`, or the refresh of a zone state records):
the region's resource SKUs and the subscription's vCPU usage and limits, judged by the live compute rules deploy's
preflight runs, and the live quota beside each family's need.

Sources: Resource Skus - List (learn.microsoft.com/rest/api/compute/resource-skus/list: `locationInfo`,
`restrictions`, `family`) and Usage - List (learn.microsoft.com/rest/api/compute/usage/list: per family
`currentValue` and `limit`, `name.value` such as `standardNDSH100v5Family`). A plan that reads nothing from Azure
(no state yet, `--refresh=false`, `--offline`) keeps the catalog and the quota the config declares.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from hpclz.azure.errors import describe, sdk_error
from hpclz.catalog.quota import QuotaNeed
from hpclz.config.loader import LoadedConfig
from hpclz.findings import Finding
from hpclz.rules.base import Rule, run_rules
from hpclz.rules.live.compute import QuotaShort, SkuNotOffered, SkuRestricted, ZoneNotOfferedLive
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.subscription import LiveFactsUnavailable

log = logging.getLogger(__name__)

PLAN_LIVE_RULES: tuple[type[Rule[Any]], ...] = (
    SkuNotOffered,
    SkuRestricted,
    ZoneNotOfferedLive,
    QuotaShort,
    LiveFactsUnavailable,
)


def live_compute(arm: Any, loaded: LoadedConfig, location: str, suppress: Iterable[str]) -> tuple[list[Finding], Any]:
    """The live compute findings, and the usages read (None where the usage API could not be read)."""
    error = sdk_error()
    ctx = LiveContext(loaded=loaded, location=location)
    try:
        ctx.skus = arm.skus(location)
    except error as exc:
        ctx.unavailable["Compute resource SKUs API"] = describe(exc).one_line()
    try:
        ctx.usages = arm.usages(location)
    except error as exc:
        ctx.unavailable["Compute usage API"] = describe(exc).one_line()
    log.info(
        "live compute facts for %s: %s SKUs, %s usage rows",
        location,
        "no" if ctx.skus is None else len(ctx.skus),
        "no" if ctx.usages is None else len(ctx.usages),
    )
    findings, _ = run_rules(PLAN_LIVE_RULES, ctx, [*loaded.config.suppress, *suppress])
    return findings, ctx.usages


def with_live_quota(needs: list[QuotaNeed], usages: list[dict[str, Any]]) -> None:
    """Each family's live limit and use, where the usage API lists the family."""
    by_family = {str((u.get("name") or {}).get("value", "")).lower(): u for u in usages}
    for need in needs:
        row = by_family.get(need.family.lower())
        if row is not None:
            need.limit = int(row.get("limit", 0))
            need.in_use = int(row.get("currentValue", 0))
