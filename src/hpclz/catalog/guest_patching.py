"""The packaged list of images Azure patches in the guest (guest_patching.json): which VMs may take
`patchMode: AutomaticByPlatform` and a guest-patch (InGuestPatch) schedule."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=1)
def _linux_images() -> frozenset[tuple[str, str, str]]:
    raw = json.loads(resources.files("hpclz.catalog").joinpath("guest_patching.json").read_text(encoding="utf-8"))
    return frozenset((r["publisher"].lower(), r["offer"].lower(), r["sku"].lower()) for r in raw["linux"])


def platform_patching_supported(image_reference: Any) -> bool:
    """True where an imageReference names, by publisher, offer and sku, a Linux image on Azure's list.

    "Supported only on VMs created from images with the exact combination of publisher, offer and sku from the
    below supported OS images list. Custom images or any other publisher, offer, sku combinations aren't supported"
    (learn.microsoft.com/azure/virtual-machines/automatic-vm-guest-patching#supported-os-images; the list and
    its commit are in guest_patching.json). A gallery or managed image (an `id`, no publisher) is a custom image."""
    if not isinstance(image_reference, dict):
        return False
    publisher, offer, sku = (str(image_reference.get(key) or "").lower() for key in ("publisher", "offer", "sku"))
    return (publisher, offer, sku) in _linux_images()
