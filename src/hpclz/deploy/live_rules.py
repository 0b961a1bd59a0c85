"""Live preflight rules: facts only Azure knows (provider registration, ARM validation, SKUs, quota).

They run in `hpclz deploy` when credentials are available, never in the offline `hpclz validate`.
The adapter gathers the facts into a LiveContext; the rules only compare them with the config.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hpclz.catalog import load_availability
from hpclz.config.loader import LoadedConfig
from hpclz.config.source_map import SourceMap
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.config.compute import GEN2_ONLY_SIZES


@dataclass
class LiveContext:
    loaded: LoadedConfig
    location: str
    unregistered: dict[str, str] = field(default_factory=dict)  # namespace -> registration state
    validation_errors: dict[str, str] = field(default_factory=dict)  # deployment -> innermost ARM error
    skus: list[dict[str, Any]] | None = None  # None: the SKU API could not be read
    usages: list[dict[str, Any]] | None = None
    unavailable: dict[str, str] = field(default_factory=dict)  # which live API failed -> why
    images: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # custom image ID -> ARM body, None: 404

    @property
    def source(self) -> SourceMap | None:
        return self.loaded.source

    def vm_sizes(self) -> list[tuple[tuple[str | int, ...], str, int]]:
        """(config path, VM size, node count at full scale) for every VM role."""
        return [(path, size, count) for path, size, count, _spot in self.vm_roles()]

    def vm_roles(self) -> list[tuple[tuple[str | int, ...], str, int, bool]]:
        """(config path, VM size, node count at full scale, spot?) for every VM role."""
        compute = self.loaded.config.compute
        out: list[tuple[tuple[str | int, ...], str, int, bool]] = [
            (("compute", role, "vm_size"), size, count, False) for role, size, count in compute.service_vms()
        ]
        for i, p in enumerate(compute.partitions):
            out.append((("compute", "partitions", i, "vm_size"), p.vm_size, p.max_nodes, p.priority == "spot"))
        return out

    def sku(self, name: str) -> dict[str, Any] | None:
        for s in self.skus or []:
            if s.get("resourceType") == "virtualMachines" and str(s.get("name", "")).lower() == name.lower():
                return s
        return None


def capability(sku: dict[str, Any], name: str) -> str | None:
    for c in sku.get("capabilities") or []:
        if c.get("name") == name:
            return str(c.get("value"))
    return None


class ProviderNotRegistered(Rule[LiveContext]):
    """ARM refuses every resource of a provider namespace the subscription has not registered, and only
    says so mid-deployment. Source: learn.microsoft.com/azure/azure-resource-manager/management/resource-providers-and-types."""

    id = "HPCLZ-ORG-101"
    severity = Severity.ERROR
    title = "A resource provider the templates use is not registered in the subscription"
    fix = "Register it: az provider register --namespace <namespace>, then wait for 'Registered'."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for namespace, state in sorted(ctx.unregistered.items()):
            yield self.finding(
                ctx,
                ("metadata", "subscription_id"),
                f"provider {namespace} is {state}",
                fix=f"az provider register --namespace {namespace}",
            )


class ArmValidationFailed(Rule[LiveContext]):
    """ARM's own validate call (template, parameters, policy, permissions) failed for a deployment."""

    id = "HPCLZ-TPL-101"
    severity = Severity.ERROR
    title = "Azure Resource Manager rejected a deployment in its validate call"
    fix = "Read ARM's message: it names the template problem, the denying policy or the missing permission."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for deployment, error in sorted(ctx.validation_errors.items()):
            yield self.finding(ctx, ("metadata",), f"deployment {deployment}: {error}")


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


class LiveFactsUnavailable(Rule[LiveContext]):
    """When a live API is unreachable or forbidden the check is skipped, and said so, rather than crash."""

    id = "HPCLZ-CMP-104"
    severity = Severity.WARNING
    title = "A live preflight check could not read Azure and was skipped"
    fix = "Grant the identity Reader on the subscription (Microsoft.Compute/skus/read, usages/read), or ignore."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for api, why in sorted(ctx.unavailable.items()):
            yield self.finding(ctx, ("metadata", "location"), f"{api} unavailable: {why}")


def _region(name: object) -> str:
    """ARM writes regions both ways: `eastus` (location of a managed image) and `East US` (targetRegions)."""
    return "".join(str(name).split()).lower()


def gallery_definition(image_id: str) -> str | None:
    """The image definition a gallery image version belongs to (its generation and OS state live there)."""
    head, sep, _ = image_id.rpartition("/versions/")
    return head if sep and "/galleries/" in image_id.lower() else None


def image_regions(image_id: str, body: dict[str, Any]) -> list[str]:
    """Where VMs can be created from this image: a gallery version's target regions, else the image's location."""
    if "/versions/" in image_id.lower():
        targets = ((body.get("properties") or {}).get("publishingProfile") or {}).get("targetRegions") or []
        return [_region(t.get("name")) for t in targets if isinstance(t, dict)]
    return [_region(body.get("location"))] if body.get("location") else []


class CustomImageUsable(Rule[LiveContext]):
    """A custom image must exist, be readable, and be in the landing zone's region: a gallery image version
    deploys only in the regions it is replicated to (publishingProfile.targetRegions, e.g. "West US" in
    azure-rest-api-specs GalleryRP/stable/2023-07-03/examples/galleryExamples/GalleryImageVersion_Get_WithVhdAsSource
    .json), a managed image only in its own location (ComputeRP/stable/2024-03-01 Image_Get.json). CycleCloud
    only finds out when it starts the node, long after deploy."""

    id = "HPCLZ-CMP-105"
    severity = Severity.ERROR
    title = "Custom image missing, unreadable or not in the region"
    fix = (
        "Replicate the image version to the region (az sig image-version update --add "
        "publishingProfile.targetRegions name=<region>), fix the ID, or grant the deploying identity Reader on it."
    )

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for path, who, _, image in ctx.loaded.config.compute.custom_images():
            if image not in ctx.images:
                continue  # never asked, or the read failed (HPCLZ-CMP-104 says which)
            body = ctx.images[image]
            if body is None:
                yield self.finding(ctx, path, f"{who}: image {image} was not found (or is not visible to you)")
                continue
            if "/galleries/" in image.lower() and "/versions/" not in image.lower():
                continue  # a definition: Azure picks its latest version, whose regions this read does not show
            regions = image_regions(image, body)
            if _region(ctx.location) not in regions:
                yield self.finding(
                    ctx, path, f"{who}: image is available in {', '.join(regions) or 'no region'}, not {ctx.location}"
                )


class CustomImageFitsNodes(Rule[LiveContext]):
    """Two properties of a gallery image definition decide whether its nodes boot as cluster nodes:
    hyperVGeneration (a size that boots only Generation 2 images, such as ND H100 v5 per its series page,
    cannot start from a V1 definition) and osState (CycleCloud needs a Generalized image: "Specialized images
    ... lack the osProfile that CycleCloud needs", learn.microsoft.com/azure/cyclecloud/how-to/create-custom-image).
    Both are in the definition ARM returns (GalleryRP/stable/2023-07-03 GalleryImage_Get.json:
    "osState": "Generalized", "hyperVGeneration": "V1")."""

    id = "HPCLZ-CMP-106"
    severity = Severity.ERROR
    title = "Custom image is Generation 1 on a Gen2-only size, or specialized"
    fix = "Use a Generalized image definition with hyperVGeneration V2 (a definition's generation cannot change)."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for path, who, size, image in ctx.loaded.config.compute.custom_images():
            definition = ctx.images.get(gallery_definition(image) or image) if "/galleries/" in image.lower() else None
            props = (definition or {}).get("properties") or {}
            if size in GEN2_ONLY_SIZES and props.get("hyperVGeneration") == "V1":
                yield self.finding(ctx, path, f"{who}: {size} boots only Generation 2 images; this definition is V1")
            if props.get("osState") == "Specialized":
                yield self.finding(ctx, path, f"{who}: the image is Specialized; CycleCloud nodes need Generalized")


LIVE_RULES: tuple[type[Rule[Any]], ...] = (
    ProviderNotRegistered,
    ArmValidationFailed,
    SkuNotOffered,
    SkuRestricted,
    QuotaShort,
    LiveFactsUnavailable,
    CustomImageUsable,
    CustomImageFitsNodes,
)
