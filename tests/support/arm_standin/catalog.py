"""The SKUs and quota the stand-in reports by default: every size the presets use, generous quota.

vCPU counts and quota family names as the Compute resource SKUs API reports them
(learn.microsoft.com/azure/virtual-machines/sizes).
"""

from __future__ import annotations

from typing import Any

SIZES: dict[str, tuple[str, int]] = {
    "Standard_D4as_v5": ("standardDASv5Family", 4),
    "Standard_D8as_v5": ("standardDASv5Family", 8),
    "Standard_D16as_v5": ("standardDASv5Family", 16),
    "Standard_F72s_v2": ("standardFSv2Family", 72),
    "Standard_HB120rs_v3": ("standardHBv3Family", 120),
    "Standard_HB176rs_v4": ("standardHBv4Family", 176),
    "Standard_HX176rs": ("standardHXFamily", 176),
    "Standard_ND96isr_H100_v5": ("standardNDSH100v5Family", 96),
    "Standard_ND96isr_H200_v5": ("standardNDISRH200V5Family", 96),
    "Standard_ND128isr_GB300_v6": ("standardNDISRGB300V6Family", 128),
}


def sku(
    name: str, location: str, family: str, vcpus: int, restrictions: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "resourceType": "virtualMachines",
        "name": name,
        "tier": "Standard",
        "size": name.removeprefix("Standard_"),
        "family": family,
        "locations": [location],
        "locationInfo": [{"location": location, "zones": ["1", "2", "3"]}],
        "capabilities": [{"name": "vCPUs", "value": str(vcpus)}, {"name": "HyperVGenerations", "value": "V1,V2"}],
        "restrictions": restrictions or [],
    }


def default_skus(location: str) -> list[dict[str, Any]]:
    return [sku(name, location, family, vcpus) for name, (family, vcpus) in SIZES.items()]


def usage(family: str, current: int, limit: int) -> dict[str, Any]:
    return {
        "unit": "Count",
        "currentValue": current,
        "limit": limit,
        "name": {"value": family, "localizedValue": family},
    }


def default_usages() -> list[dict[str, Any]]:
    families = sorted({family for family, _ in SIZES.values()})
    return [usage("cores", 0, 100000), *(usage(f, 0, 20000) for f in families)]


VM_IMAGE = (
    r"/providers/microsoft\.compute/locations/(?P<loc>[^/]+)/publishers/(?P<pub>[^/]+)/artifacttypes/vmimage"
    r"/offers/(?P<offer>[^/]+)/skus/(?P<sku>[^/]+)/versions/(?P<version>[^/]+)"
)


def vm_image_body(
    sub: str, loc: str, pub: str, offer: str, sku: str, version: str, status: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A Virtual Machine Images - Get body, shaped as the REST spec's example (ComputeRP/stable/2024-07-01
    VirtualMachineImage_Get_MaximumSet_Gen.json; tests/fixtures/arm/vmimage_get_specexample.json): a Linux Gen2
    image, Active unless the test gives another imageDeprecationStatus."""
    return {
        "id": (
            f"/Subscriptions/{sub}/Providers/Microsoft.Compute/Locations/{loc}/Publishers/{pub}/ArtifactTypes/VMImage"
            f"/Offers/{offer}/Skus/{sku}/Versions/{version}"
        ),
        "name": version,
        "location": loc,
        "properties": {
            "osDiskImage": {"operatingSystem": "Linux"},
            "dataDiskImages": [],
            "hyperVGeneration": "V2",
            "imageDeprecationStatus": status or {"imageState": "Active"},
        },
    }
