"""The monthly estimate of a landing zone: an idle baseline, then each partition at max_nodes.

Fixed-hourly services are priced at 730 hours a month (Azure's pricing-calculator month). A line whose meter
hpclz maps but whose price is in neither the refreshed cache nor the shipped snapshot says "price unknown
offline"; a service billed by capacity or usage that hpclz does not map to a meter yet says so too. Neither
is ever given a guessed figure, and totals count only priced lines (`unpriced` says how many are missing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field

from hpclz.config.budget import HOURS_PER_MONTH
from hpclz.config.operations import NewMonitoring
from hpclz.config.root import LandingZoneConfig
from hpclz.config.storage import NewBlob, NewLustre, NewNetApp
from hpclz.cost.kinds import NO_CHARGE, UNPRICED
from hpclz.cost.prices import (
    CURRENCY,
    NAT_GATEWAY_METER,
    TERMS,
    RegionPrices,
    bastion_meter,
    load_region,
    reserved_meter,
    savings_meter,
    vm_meter,
)

UNKNOWN_OFFLINE = "price unknown offline"
NOT_PRICED = "not priced"
NOT_MAPPED = "not priced by hpclz yet"


class Commitment(BaseModel):
    """A reservation or savings plan price for a pay-as-you-go VM line (hpclz.cost.prices: Retail Prices API)."""

    kind: Literal["reservation", "savings plan"]
    years: int
    monthly_usd: float = Field(
        description="The line's month: a reservation's term price over its months for every node, whatever it "
        "runs; a savings plan's hourly rate for the hours the line runs."
    )


class CostLine(BaseModel):
    group: Literal["baseline", "partition"]
    name: str = Field(description="What the line is, e.g. 'scheduler VM Standard_D8as_v5' or 'partition gpu'.")
    meter: str | None = Field(default=None, description="hpclz meter key (vm:<size>, vm-spot:<size>, bastion:<tier>).")
    count: int = 1
    hours: float = Field(default=HOURS_PER_MONTH, description="Hours a month each unit runs in this estimate.")
    unit_usd: float | None = Field(default=None, description="Price per unit-hour (a node-hour for partitions).")
    monthly_usd: float | None = None
    spot: bool = False
    note: str = Field(default="", description="Why a line has no price, or what it leaves out.")
    covers: list[str] = Field(default_factory=list, description="ARM resource types the line accounts for.")
    commitments: list[Commitment] = Field(
        default_factory=list, description="Reservation and savings plan prices beside pay-as-you-go, where known."
    )
    source: str | None = None
    as_of: str | None = None

    @property
    def priced(self) -> bool:
        return self.monthly_usd is not None


class Estimate(BaseModel):
    currency: str = CURRENCY
    region: str
    prices_from: str = Field(description="cache (hpclz prices refresh), snapshot (shipped), or none.")
    prices_as_of: str | None = None
    prices_note: str = Field(default="", description="How plan got its prices: read now, cached, or why not.")
    partition_hours: float
    lines: list[CostLine] = Field(default_factory=list)
    budget_usd: float | None = None
    delta_usd: float | None = Field(
        default=None, description="Priced total minus the last applied config's (plan only; None without one)."
    )

    def _sum(self, group: str | None = None) -> float:
        return round(sum(li.monthly_usd or 0.0 for li in self.lines if group in (None, li.group)), 2)

    @property
    def baseline_usd(self) -> float:
        return self._sum("baseline")

    @property
    def partitions_usd(self) -> float:
        return self._sum("partition")

    @property
    def total_usd(self) -> float:
        return self._sum()

    @property
    def unpriced(self) -> int:
        return sum(1 for li in self.lines if not li.priced)

    @property
    def budget_share(self) -> float | None:
        """Priced total over the budget (1.0 = all of it); a lower bound while lines are unpriced."""
        return None if not self.budget_usd else self.total_usd / self.budget_usd

    def payload(self) -> dict[str, object]:
        body = self.model_dump(mode="json")
        body.update(
            baseline_usd=self.baseline_usd,
            partitions_usd=self.partitions_usd,
            total_usd=self.total_usd,
            unpriced_lines=self.unpriced,
            budget_share=self.budget_share,
        )
        return body


def with_delta(current: Estimate, applied: LandingZoneConfig | None) -> Estimate:
    """`current` with the monthly change against the config last applied, priced with the same prices."""
    if applied is None:
        return current
    before = estimate(applied, hours=current.partition_hours)
    current.delta_usd = round(current.total_usd - before.total_usd, 2)
    return current


def _priced(line: CostLine, book: RegionPrices | None) -> CostLine:
    price = book.prices.get(line.meter or "") if book else None
    if price is None:
        line.note = line.note or UNKNOWN_OFFLINE
        return line
    line.unit_usd = price.usd
    line.monthly_usd = round(price.usd * line.count * line.hours, 2)
    line.source, line.as_of = price.source, book.as_of if book else None
    if book is not None and line.meter and line.meter.startswith("vm:"):
        line.commitments = _commitments(line, line.meter.removeprefix("vm:"), book)
    return line


def _commitments(line: CostLine, size: str, book: RegionPrices) -> list[Commitment]:
    out = []
    for years in sorted(TERMS.values()):
        reserved = book.prices.get(reserved_meter(size, years))
        if reserved is not None:  # the term's price, paid whatever the node runs
            monthly = reserved.usd / (12 * years) * line.count
            out.append(Commitment(kind="reservation", years=years, monthly_usd=round(monthly, 2)))
        plan = book.prices.get(savings_meter(size, years))
        if plan is not None:  # an hourly rate, for the hours the line runs
            monthly = plan.usd * line.count * line.hours
            out.append(Commitment(kind="savings plan", years=years, monthly_usd=round(monthly, 2)))
    return out


def _baseline(config: LandingZoneConfig) -> list[CostLine]:
    # The CycleCloud server (and the portal) are the VMs ARM deploys; CycleCloud creates the scheduler and login.
    vm = ["Microsoft.Compute/virtualMachines"]
    lines = [
        CostLine(
            group="baseline",
            name=f"{role} VM {size}{f' x {count}' if count > 1 else ''}",
            meter=vm_meter(size),
            count=count,
            covers=vm if role == "cyclecloud" else [],
        )
        for role, size, count in config.compute.service_vms()
    ]
    if config.portal.enabled:
        size = config.portal.vm_size
        lines.append(
            CostLine(group="baseline", name=f"Open OnDemand portal VM {size}", meter=vm_meter(size), covers=vm)
        )
    network = config.network
    if network.bastion.enabled:
        tier = network.bastion.sku
        lines.append(
            CostLine(
                group="baseline",
                name=f"Bastion {tier}",
                meter=bastion_meter(tier),
                covers=["Microsoft.Network/bastionHosts"],
            )
        )
    if network.nat_gateway.enabled:
        lines.append(
            CostLine(
                group="baseline",
                name="NAT gateway (hourly; data processed not estimated)",
                meter=NAT_GATEWAY_METER,
                covers=["Microsoft.Network/natGateways"],
            )
        )
    # Billed by capacity or usage; only what hpclz creates ("new") is counted.
    storage = config.storage
    if isinstance(storage.lustre, NewLustre):
        lines.append(
            _unmapped(
                f"Azure Managed Lustre {storage.lustre.sku}, {storage.lustre.capacity_tib} TiB",
                "Microsoft.StorageCache/amlFilesystems",
            )
        )
    if isinstance(storage.netapp, NewNetApp):
        lines.append(
            _unmapped(
                f"Azure NetApp Files {storage.netapp.service_level}, {storage.netapp.pool_size_tib} TiB",
                "Microsoft.NetApp/netAppAccounts/capacityPools",
            )
        )
    if isinstance(storage.blob, NewBlob):
        lines.append(_unmapped(f"Blob storage {storage.blob.replication} (capacity and transactions)"))
    if isinstance(config.monitoring, NewMonitoring):
        lines.append(_unmapped("Log Analytics (data ingested)", "Microsoft.OperationalInsights/workspaces"))
    return lines


def _unmapped(name: str, *covers: str) -> CostLine:
    return CostLine(group="baseline", name=name, note=NOT_MAPPED, covers=list(covers))


NO_FACT = "not priced: hpclz holds no billing fact for this resource kind"


def _short(kind: str) -> str:
    return kind.removeprefix("Microsoft.")


def kind_lines(counts: Mapping[str, int], covered: set[str]) -> list[CostLine]:
    """A line for each billed kind in `counts` (type -> how many the plan deploys) that no line already prices,
    and one $0 line gathering the kinds with no charge of their own, so every kind is accounted for."""
    lines = []
    free = sorted(k for k in counts if k in NO_CHARGE and k not in covered)
    for kind in sorted(counts):
        if kind in covered or kind in NO_CHARGE:
            continue
        note = f"{NOT_PRICED}: billed {UNPRICED[kind]}" if kind in UNPRICED else NO_FACT
        lines.append(CostLine(group="baseline", name=f"{_short(kind)} x {counts[kind]}", note=note, covers=[kind]))
    if free:
        names = ", ".join(f"{_short(k)} x {counts[k]}" for k in free)
        lines.append(
            CostLine(
                group="baseline",
                name=f"no charge of their own: {names}",
                unit_usd=0.0,
                monthly_usd=0.0,
                note="; ".join(f"{_short(k)}: {NO_CHARGE[k]}" for k in free),
                covers=free,
            )
        )
    return lines


def estimate(
    config: LandingZoneConfig,
    *,
    hours: float | None = None,
    book: RegionPrices | None = None,
    kinds: Mapping[str, int] | None = None,
) -> Estimate:
    """The monthly estimate of `config`; `hours` (default: budget.partition_hours, else 730) is how long each
    partition runs at max_nodes. `book` defaults to the region's cached or shipped prices. `kinds` (ARM type ->
    count, from the rendered plan): each kind no config line covers gets its own line (hpclz.cost.kinds)."""

    region = config.metadata.location
    book = book if book is not None else load_region(region)
    budget = config.budget
    partition_hours = hours if hours is not None else (budget.partition_hours if budget else HOURS_PER_MONTH)
    lines = _baseline(config)
    if kinds:
        lines += kind_lines(kinds, {kind for line in lines for kind in line.covers})
    for p in config.compute.partitions:
        spot = p.priority == "spot"
        lines.append(
            CostLine(
                group="partition",
                name=f"partition {p.name}: {p.max_nodes} x {p.vm_size}{' (spot)' if spot else ''}",
                meter=vm_meter(p.vm_size, spot=spot),
                count=p.max_nodes,
                hours=partition_hours,
                spot=spot,
            )
        )
    return Estimate(
        region=region,
        prices_from=book.origin if book else "none",
        prices_as_of=book.as_of if book else None,
        partition_hours=partition_hours,
        lines=[_priced(li, book) if li.meter else li for li in lines],
        budget_usd=budget.monthly_usd if budget else None,
    )
