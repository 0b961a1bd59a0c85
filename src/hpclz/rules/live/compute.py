"""Live compute rules: whether the region offers each VM size to this subscription, and the vCPU quota left."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hpclz.catalog import load_availability
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.live.context import LiveContext, capability


class SkuNotOffered(Rule[LiveContext]):
    """A VM size the region does not offer fails every node of its partition. Source: the Compute
    resource SKUs API (learn.microsoft.com/rest/api/compute/resource-skus/list). The fix names the regions
    where published captures show the size (hpclz.catalog availability.json), a did-you-mean offline data
    can give but never contradict: only Azure knows what this subscription may use."""

    id = "HPCLZ-CMP-101"
    severity = Severity.ERROR
    title = "A VM size is not offered in the region"
    fix = "Pick a region that offers the size, or another size (az vm list-skus --location <region> --size <size>)."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        if ctx.skus is None:
            return
        for path, size, _count in ctx.vm_sizes():
            if ctx.sku(size) is None:
                yield self.finding(ctx, path, f"{size} is not offered in {ctx.location}", fix=_elsewhere(size, ctx))


def _elsewhere(size: str, ctx: LiveContext) -> str | None:
    known = [r for r in load_availability().regions_offering(size) if r != ctx.location.lower()]
    if not known:
        return None
    return f"Regions published captures show offering {size}: {', '.join(known)}; or pick another size."


class SkuRestricted(Rule[LiveContext]):
    """A size can be listed yet restricted for this subscription (NotAvailableForSubscription) in the
    region or some zones; nodes then fail to allocate. Source: the `restrictions` of the resource SKUs API."""

    id = "HPCLZ-CMP-102"
    severity = Severity.ERROR
    title = "A VM size is restricted for this subscription in the region or a zone"
    fix = "Ask Azure support to lift the restriction (a quota/access request), or choose another region or size."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for path, size, _count in ctx.vm_sizes():
            sku = ctx.sku(size)
            for r in (sku or {}).get("restrictions") or []:
                info = r.get("restrictionInfo") or {}
                zones = info.get("zones") or []
                where = f"zones {', '.join(zones)}" if r.get("type") == "Zone" else ctx.location
                yield self.finding(
                    ctx,
                    path,
                    f"{size} is restricted in {where}: {r.get('reasonCode', 'restricted')}",
                    severity=Severity.WARNING if r.get("type") == "Zone" else None,
                )


class QuotaShort(Rule[LiveContext]):
    """Quota is per VM family and region (spot VMs draw on one shared low-priority quota, and every
    regular VM also on the regional total); a partition that cannot reach max_nodes stalls jobs with
    allocation errors long after deploy. vCPUs come from hpclz.catalog, else the SKU API's
    capabilities; usage from the Compute usage API (usage.list)."""

    id = "HPCLZ-CMP-103"
    severity = Severity.WARNING
    title = "vCPU quota left in a VM family is less than the partitions need at full scale"
    fix = "Request more quota for the family (Azure portal > Quotas), or lower max_nodes."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        if ctx.skus is None or ctx.usages is None:
            return
        from hpclz.catalog import load_catalog

        catalog = load_catalog()
        free = {
            str((u.get("name") or {}).get("value", "")).lower(): int(u.get("limit", 0)) - int(u.get("currentValue", 0))
            for u in ctx.usages
        }
        need: dict[str, tuple[int, tuple[str | int, ...], list[str]]] = {}

        def add(family: str, vcpus: int, path: tuple[str | int, ...], size: str) -> None:
            total, first, sizes = need.get(family, (0, path, []))
            need[family] = (total + vcpus, first, [*sizes, size])

        for path, size, count, spot in ctx.vm_roles():
            known, sku = catalog.sku(size), ctx.sku(size)
            vcpus = known.vcpus if known else int(capability(sku, "vCPUs") or 0) if sku else 0
            family = (sku or {}).get("family") or (known.quota_family if known else None)
            if not vcpus or not family:
                continue
            if spot:
                add(catalog.spot_quota_family, vcpus * count, path, size)
                continue
            add(str(family), vcpus * count, path, size)
            add("cores", vcpus * count, path, size)
        for family, (total, path, sizes) in sorted(need.items()):
            available = free.get(family.lower())
            if available is not None and available < total:
                yield self.finding(
                    ctx,
                    path,
                    f"{family} needs {total} vCPUs at full scale ({', '.join(sorted(set(sizes)))}); "
                    f"{max(available, 0)} left in {ctx.location}",
                )


def _zoned_roles(ctx: LiveContext) -> Iterable[tuple[tuple[str | int, ...], str, str]]:
    """(config path of the zone, VM size, zone) of every VM role the config puts in a zone."""
    compute = ctx.loaded.config.compute
    if compute.service_zone is not None:
        sizes = dict.fromkeys(size for _role, size, count in compute.service_vms() if count)
        for size in sizes:  # the scheduler and login nodes often share a size: one finding for it
            yield ("compute", "service_zone"), size, compute.service_zone
    for i, p in enumerate(compute.partitions):
        if p.zone is not None:
            yield ("compute", "partitions", i, "zone"), p.vm_size, p.zone


def _offered_zones(sku: dict[str, Any], location: str) -> set[str]:
    info = [i for i in sku.get("locationInfo") or [] if str(i.get("location", "")).lower() == location.lower()]
    return {str(z) for i in info for z in i.get("zones") or []}


def _restricted_zones(sku: dict[str, Any]) -> set[str]:
    return {
        str(z)
        for r in sku.get("restrictions") or []
        if r.get("type") == "Zone"
        for z in (r.get("restrictionInfo") or {}).get("zones") or []
    }


class ZoneNotOfferedLive(Rule[LiveContext]):
    """A zonal VM or node in a zone Azure does not offer its size in (or restricts for this subscription) never
    allocates. Source: the resource SKUs API's `locationInfo[].zones` and Zone-type `restrictions`
    (learn.microsoft.com/rest/api/compute/resource-skus/list; the spec's example lists Standard_A0 in zones 2 and 1
    of westus). The offline rules HPCLZ-ZON-001/002 know only what published captures show; this is the answer for
    this subscription, now."""

    id = "HPCLZ-CMP-108"
    severity = Severity.ERROR
    title = "A configured availability zone does not offer the VM size to this subscription"
    fix = "Pick a zone the SKU API lists for the size (az vm list-skus --location <region> --size <size> --zone)."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        if ctx.skus is None:
            return
        for path, size, zone in _zoned_roles(ctx):
            sku = ctx.sku(size)
            if sku is None:
                continue  # HPCLZ-CMP-101 says the size is not offered at all
            offered = _offered_zones(sku, ctx.location) - _restricted_zones(sku)
            if zone not in offered:
                where = f"zones {', '.join(sorted(offered))}" if offered else "no zone"
                yield self.finding(
                    ctx, path, f"{size} is offered to this subscription in {where} of {ctx.location}, not zone {zone}"
                )
