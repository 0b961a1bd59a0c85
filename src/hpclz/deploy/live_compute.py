"""Live compute rules: whether the region offers each VM size to this subscription, and the vCPU quota left."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.catalog import load_availability
from hpclz.deploy.live_context import LiveContext, capability
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule


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
