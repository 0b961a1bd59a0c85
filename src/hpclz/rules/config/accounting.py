"""Compute rules for Slurm accounting's MySQL flexible server (compute.accounting mode new).

Facts from learn.microsoft.com/azure/mysql/flexible-server: concepts-networking-vnet (delegated subnet, /29 at
least, one address per server and two with high availability), concepts-high-availability (no HA on Burstable,
zone-redundant standby in another zone) and concepts-service-tiers-storage (Burstable is "not recommended for
production workloads").
"""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.config.compute import NewAccounting
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

ACCOUNTING = ("compute", "accounting")
SUBNETS = ("network", "vnet", "subnets")
MYSQL_DELEGATION = "Microsoft.DBforMySQL/flexibleServers"
# "The smallest CIDR range you can specify for the subnet ... is /29" (concepts-networking-vnet).
MYSQL_MIN_PREFIX = 29


def _new(ctx: ConfigContext) -> NewAccounting | None:
    accounting = ctx.config.compute.accounting
    return accounting if isinstance(accounting, NewAccounting) else None


class AccountingSubnetDelegated(Rule[ConfigContext]):
    """A MySQL flexible server with private access lives in a subnet delegated to Microsoft.DBforMySQL/flexibleServers,
    which then hosts nothing else ("No other Azure resource types can be in the delegated subnet",
    learn.microsoft.com/azure/mysql/flexible-server/concepts-networking-vnet). hpclz places it in the database subnet."""

    id = "HPCLZ-CMP-042"
    severity = Severity.ERROR
    title = "Accounting server needs a database subnet delegated to MySQL"
    fix = (
        "Add network.vnet.subnets.database with delegation: Microsoft.DBforMySQL/flexibleServers (a /29 or larger), "
        "and delegate no other subnet to it."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        database = ctx.config.network.vnet.subnets.database
        if _new(ctx) is not None and database is None:
            yield self.finding(ctx, (*ACCOUNTING, "mode"), "mode new needs network.vnet.subnets.database")
        for role, subnet in ctx.subnets():
            if role == "database" and subnet.delegation != MYSQL_DELEGATION:
                yield self.finding(
                    ctx,
                    (*SUBNETS, role),
                    f"the database subnet is delegated to {subnet.delegation or 'nothing'}; it must be "
                    f"{MYSQL_DELEGATION}",
                )
            elif role != "database" and subnet.delegation == MYSQL_DELEGATION:
                yield self.finding(
                    ctx,
                    (*SUBNETS, role, "delegation"),
                    f"subnet {role} is delegated to {MYSQL_DELEGATION}; hpclz puts the server in the database subnet",
                )


class AccountingSubnetSize(Rule[ConfigContext]):
    """Azure takes five addresses of every subnet; a server needs one more, two with high availability, and the docs
    advise two per server because HA can be turned on later. /29 is the smallest subnet Azure accepts for it, and a
    subnet cannot grow while the server sits in it (concepts-networking-vnet)."""

    id = "HPCLZ-CMP-043"
    severity = Severity.ERROR
    title = "Database subnet smaller than the /29 a MySQL flexible server needs"
    fix = "Give network.vnet.subnets.database a /29 or larger range (a /28 leaves room for later servers)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        database = ctx.config.network.vnet.subnets.database
        if database is not None and database.cidr.prefixlen > MYSQL_MIN_PREFIX:
            yield self.finding(
                ctx,
                (*SUBNETS, "database", "cidr"),
                f"the database subnet is /{database.cidr.prefixlen}; Azure needs /{MYSQL_MIN_PREFIX} or larger",
            )


class AccountingHighAvailabilityTier(Rule[ConfigContext]):
    """ "High availability isn't supported in the burstable compute tier"
    (learn.microsoft.com/azure/mysql/flexible-server/concepts-high-availability#limitations): ARM refuses the server."""

    id = "HPCLZ-CMP-044"
    severity = Severity.ERROR
    title = "Accounting high availability on the Burstable tier"
    fix = "Use tier GeneralPurpose (e.g. sku Standard_D2ads_v5) or MemoryOptimized, or high_availability: Disabled."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        db = _new(ctx)
        if db is not None and db.high_availability != "Disabled" and db.tier == "Burstable":
            yield self.finding(
                ctx, (*ACCOUNTING, "high_availability"), f"{db.high_availability} HA is not offered on Burstable"
            )


class AccountingZoneRedundantZones(Rule[ConfigContext]):
    """Zone-redundant HA keeps the standby "in another availability zone of the same Azure region", is offered only
    where the region has several zones, and is set only when the server is created
    (learn.microsoft.com/azure/mysql/flexible-server/concepts-high-availability). hpclz names both zones so the
    primary can sit beside the cluster and a redeploy never moves it."""

    id = "HPCLZ-CMP-045"
    severity = Severity.ERROR
    title = "Zone-redundant accounting needs two different zones"
    fix = "Set compute.accounting.zone and standby_zone to two different zones (1, 2 or 3)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        db = _new(ctx)
        if db is None:
            return
        if db.high_availability == "ZoneRedundant" and (db.zone is None or db.standby_zone in (None, db.zone)):
            yield self.finding(
                ctx,
                (*ACCOUNTING, "standby_zone"),
                f"zone {db.zone or 'unset'} and standby_zone {db.standby_zone or 'unset'} must be two different zones",
            )
        elif db.high_availability != "ZoneRedundant" and db.standby_zone is not None:
            yield self.finding(
                ctx,
                (*ACCOUNTING, "standby_zone"),
                f"standby_zone applies only to high_availability: ZoneRedundant, not {db.high_availability}",
            )


class AccountingProductionTier(Rule[ConfigContext]):
    """ "The burstable compute tier is designed for nonproduction workloads ... does not qualify for 24/7 support or
    root cause analysis" and "is not recommended for production workloads"; it also runs out of CPU credits
    under steady load (learn.microsoft.com/azure/mysql/flexible-server/concepts-service-tiers-storage). A prod
    cluster's job accounting and fair-share need the database up: a warning, since small clusters may accept it."""

    id = "HPCLZ-CMP-046"
    severity = Severity.WARNING
    title = "Production accounting database on the Burstable tier"
    fix = "Set compute.accounting tier: GeneralPurpose and sku: Standard_D2ads_v5 (or larger) for prod."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        db = _new(ctx)
        if db is not None and ctx.is_prod and db.tier == "Burstable":
            yield self.finding(ctx, (*ACCOUNTING, "tier"), f"a prod landing zone's accounting server is {db.sku}")


ACCOUNTING_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    AccountingSubnetDelegated,
    AccountingSubnetSize,
    AccountingHighAvailabilityTier,
    AccountingZoneRedundantZones,
    AccountingProductionTier,
)
