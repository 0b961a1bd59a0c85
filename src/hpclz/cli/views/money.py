"""The monthly estimate as text for `hpclz plan`: baseline lines, partition lines, totals, delta, budget."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from hpclz.cost.estimate import CostLine, Estimate

if TYPE_CHECKING:
    from rich.console import Console

    from hpclz.catalog.quota import QuotaNeed

from hpclz.rules.config.operations import BUDGET_WARN_SHARE as WARN_SHARE


def usd(value: float) -> str:
    return f"${value:,.2f}"


def _line(li: CostLine) -> str:
    name = escape(li.name)
    if li.unit_usd is None or li.monthly_usd is None:
        return f"    {name}: [yellow]{escape(li.note)}[/]"
    if li.monthly_usd == 0 and li.unit_usd == 0:
        return f"    {name}: {usd(0)}"
    if li.group == "partition":
        spot = " spot" if li.spot else ""
        return (
            f"    {name}: {usd(li.unit_usd)}/node-hour{spot}; at max_nodes for {li.hours:g} h = "
            f"{usd(li.monthly_usd)}/month"
        )
    units = f"{li.count} x " if li.count != 1 else ""
    return f"    {name}: {units}{usd(li.unit_usd)}/h x {li.hours:g} h = {usd(li.monthly_usd)}/month"


def commitment_line(li: CostLine) -> str | None:
    """`1-year reservation $X/month (-40%), ...` beside a priced pay-as-you-go VM line, where prices are known."""
    if not li.commitments or not li.monthly_usd:
        return None
    parts = []
    for c in li.commitments:
        change = (c.monthly_usd - li.monthly_usd) / li.monthly_usd
        parts.append(f"{c.years}-year {c.kind} {usd(c.monthly_usd)}/month ({change:+.0%})")
    return f"      [dim]or {'; '.join(parts)}[/]"


def subtotal(est: Estimate, group: str) -> str:
    """A group's sum, never a bare $0.00 for lines that have no price: unknown, or a lower bound."""
    lines = [li for li in est.lines if li.group == group]
    priced = [li for li in lines if li.priced]
    value = est.baseline_usd if group == "baseline" else est.partitions_usd
    if lines and not any(li.monthly_usd for li in priced) and len(priced) < len(lines):
        return f"{group} unknown"  # only free lines priced: $0.00 would hide every unknown one
    return f"{group} {'at least ' if len(priced) < len(lines) else ''}{usd(value)}"


def _with_commitments(lines: list[CostLine]) -> list[str]:
    out = []
    for li in lines:
        out.append(_line(li))
        also = commitment_line(li)
        if also:
            out.append(also)
    return out


def estimate_lines(est: Estimate) -> list[str]:
    origin = {"cache": "refreshed", "snapshot": "shipped snapshot", "none": "no prices for this region"}
    as_of = f" of {est.prices_as_of}" if est.prices_as_of else ""
    out = [
        f"\n[bold]Estimated monthly cost[/] ({est.currency} retail list prices, {escape(est.region)}, "
        f"{origin.get(est.prices_from, est.prices_from)}{as_of}):",
        *([f"  [dim]{escape(est.prices_note)}[/]"] if est.prices_note else []),
        "  Idle baseline (always on, 730 h/month):",
        *_with_commitments([li for li in est.lines if li.group == "baseline"]),
        f"  Partitions (every node, {est.partition_hours:g} h/month):",
        *_with_commitments([li for li in est.lines if li.group == "partition"]),
    ]
    if est.unpriced and not est.total_usd:
        out.append(
            "  Total: unknown: no line with a charge has a price here; `hpclz prices refresh CONFIG` reads current ones"
        )
    else:
        bound = "at least " if est.unpriced else ""
        missing = f" ({est.unpriced} lines without a price)" if est.unpriced else ""
        out.append(
            f"  Total: {bound}{usd(est.total_usd)}/month = {subtotal(est, 'baseline')} + "
            f"{subtotal(est, 'partition').replace('partition', 'partitions', 1)}{missing}"
        )
    if est.delta_usd is not None:
        sign = "+" if est.delta_usd >= 0 else "-"
        out.append(f"  Change against the last apply: {sign}{usd(abs(est.delta_usd))}/month (priced lines)")
    share = est.budget_share
    if share is not None and est.budget_usd is not None:
        style = "red" if share > 1 else "yellow" if share > WARN_SHARE else "green"
        out.append(f"  Budget: {usd(est.budget_usd)}/month; this estimate is [{style}]{share:.0%}[/] of it")
    return out


def print_estimate(out: Console, est: Estimate) -> None:
    out.print("\n".join(estimate_lines(est)), highlight=False)


def quota_lines(needs: list[QuotaNeed], region: str) -> list[str]:
    """vCPUs per quota family with every node running, against compute.quotas; shown whether declared or not."""
    if not needs:
        return []
    live = any(n.left is not None for n in needs)
    against_what = "the subscription's live limit and use" if live else "compute.quotas is what you declared"
    out = [f"\n[bold]vCPU quota needed[/] (every node running; {against_what}):"]
    for need in needs:
        users = escape(", ".join(need.users))
        if need.left is not None:
            room = f"{need.limit:,} limit, {need.in_use:,} in use"
            against = (
                f"[red]{room}: short by {need.vcpus - need.left:,}[/]"
                if need.short
                else f"[green]{room}: {need.left - need.vcpus:,} to spare[/]"
            )
        elif need.declared is None:
            against = f"[yellow]no quota declared[/]: check `az vm list-usage -l {escape(region)}`"
        elif need.short:
            against = f"[red]{need.declared:,} declared: short by {need.vcpus - need.declared:,}[/]"
        else:
            against = f"[green]{need.declared:,} declared[/]"
        out.append(f"  {escape(need.family)}: {need.vcpus:,} vCPUs ({users}); {against}")
    return out


def print_quota(out: Console, needs: list[QuotaNeed], *, region: str) -> None:
    lines = quota_lines(needs, region)
    if lines:
        out.print("\n".join(lines), highlight=False)
