"""Availability zone rules (ZON): zones a size is offered in, what must share a zone, zonal service VMs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hpclz.catalog import load_availability
from hpclz.config.storage import NewLustre
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

ZonedRole = tuple[tuple[str | int, ...], str, str]  # (config path of the zone, VM size, zone)


def zoned_roles(ctx: ConfigContext) -> Iterator[ZonedRole]:
    """Every VM role that names a zone: the service VMs (one zone for all three) and each zonal partition."""
    compute = ctx.config.compute
    if compute.service_zone is not None:
        for _role, size, count in compute.service_vms():
            if count:
                yield ("compute", "service_zone"), size, compute.service_zone
    for index, partition, _sku in ctx.partitions():
        if partition.zone is not None:
            yield ("compute", "partitions", index, "zone"), partition.vm_size, partition.zone


def _captured(source_ids: tuple[str, ...]) -> str:
    sources = load_availability().sources
    return ", ".join(f"{sid} ({sources[sid]['captured']})" for sid in source_ids if sid in sources)


class ZoneNotOffered(Rule[ConfigContext]):
    """A zonal VM or scale set in a zone its size is not offered in fails to allocate. Which zones offer a size is
    per region and per size: published `az vm list-skus` listings (hpclz.catalog availability.json) show
    Standard_ND96asr_v4 in zone 3 only of westus2 (2023-07-08) and Standard_ND96isr_H100_v5 in zone 2 only of
    westeurope (2026-08-13). Only a capture's positive fact is used, the most recent where captures disagree; the
    live SKU check at preflight (HPCLZ-CMP-108) has the last word for this subscription."""

    id = "HPCLZ-ZON-001"
    severity = Severity.ERROR
    title = "A zone the VM size is not offered in"
    fix = "Pick one of the zones the size is offered in there, or another size or region."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        region = ctx.config.metadata.location
        seen: set[tuple[str, str]] = set()
        for path, size, zone in zoned_roles(ctx):
            offer = load_availability().offer(size, region)
            if offer is None or offer.zones is None or zone in offer.zones or (size, zone) in seen:
                continue
            seen.add((size, zone))
            where = f"zones {', '.join(offer.zones)}" if offer.zones else "no zone (regional only)"
            yield self.finding(
                ctx, path, f"{size} is offered in {where} of {region} ({_captured(offer.sources)}), not zone {zone}"
            )


class ZoneNotKnownOffline(Rule[ConfigContext]):
    """hpclz records a size's zones only where a published capture shows them, and the captures found cover few
    regions (availability.json `_gaps`). Where none does, the zone cannot be checked offline: said once for the
    config, naming each size, so the reader knows the live check at preflight (HPCLZ-CMP-108, the resource SKUs
    API) is the one that counts. Information, not a warning: nothing in the config is wrong and nothing is to
    change, and a warning every zoned preset shows teaches people to skip warnings."""

    id = "HPCLZ-ZON-002"
    severity = Severity.INFO
    title = "The zones of a VM size in the region are not known offline"
    fix = (
        "Nothing to change if preflight passes: deploy checks the zones live (HPCLZ-CMP-108). Add a capture for the "
        "region with scripts/regen-availability to check them offline."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        region = ctx.config.metadata.location
        unknown: dict[str, tuple[tuple[str | int, ...], str]] = {}
        for path, size, zone in zoned_roles(ctx):
            offer = load_availability().offer(size, region)
            if (offer is None or offer.zones is None) and size not in unknown:
                unknown[size] = (path, zone)
        if unknown:
            first = next(iter(unknown.values()))[0]
            sizes = ", ".join(f"{size} (zone {zone})" for size, (_path, zone) in unknown.items())
            yield self.finding(ctx, first, f"not known offline whether {region} offers {sizes}; preflight checks them")


class InfiniBandAwayFromLustre(Rule[ConfigContext]):
    """An InfiniBand partition runs tightly coupled jobs whose I/O goes to Lustre: "For best performance, create your
    Azure Managed Lustre file system in the same region and availability zone as your client machines"
    (MicrosoftDocs/azure-stack-docs@f66223d azure-managed-lustre/create-file-system-portal.md). A partition without
    a zone may get nodes in any zone. Its NVMe scratch is the nodes' own disks, so it is always in the nodes' zone."""

    id = "HPCLZ-ZON-003"
    severity = Severity.ERROR
    title = "An InfiniBand partition and the Managed Lustre it uses are not in one zone"
    fix = "Set the partition's zone to storage.lustre.zone (or move Lustre to the partition's zone)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        lustre = ctx.config.storage.lustre
        if not isinstance(lustre, NewLustre):
            return
        for index, partition, _sku in ctx.partitions():
            if partition.infiniband and partition.zone != lustre.zone:
                where = f"zone {partition.zone}" if partition.zone else "no zone (any zone)"
                yield self.finding(
                    ctx,
                    ("compute", "partitions", index, "zone"),
                    f"InfiniBand partition {partition.name} is in {where}; Managed Lustre is in zone {lustre.zone}",
                )


class ProdServiceVmsRegional(Rule[ConfigContext]):
    """Azure's AI IaaS design recommendations: "Distribute VMs across Availability Zones. Minimize downtime from
    hardware failures or maintenance events" (learn.microsoft.com/azure/cloud-adoption-framework/scenarios/ai/
    infrastructure/well-architected, Reliability). A regional VM carries no zone guarantee; a zonal one is placed in
    a named zone, which the zone's NFS, Lustre and nodes can then share."""

    id = "HPCLZ-ZON-004"
    severity = Severity.WARNING
    title = "Production service VMs without an availability zone"
    fix = "Set compute.service_zone to the zone of the partitions' storage (1, 2 or 3)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.is_prod and ctx.config.compute.service_zone is None:
            yield self.finding(
                ctx, ("compute",), "the CycleCloud server, scheduler and login nodes have no availability zone"
            )


ZONE_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    ZoneNotOffered,
    ZoneNotKnownOffline,
    InfiniBandAwayFromLustre,
    ProdServiceVmsRegional,
)
