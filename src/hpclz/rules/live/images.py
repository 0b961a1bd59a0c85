"""Live rules on custom images: each must exist, be replicated to the region and boot as a cluster node."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.config.compute import GEN2_ONLY_SIZES
from hpclz.rules.live.context import LiveContext


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
