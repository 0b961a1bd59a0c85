"""Custom images checked live before deploy (HPCLZ-CMP-105): found, readable, and in the landing zone's region."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hpclz.config import load_config_text
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.images import CustomImageFitsNodes, CustomImageUsable
from tests.conftest import REPO
from tests.support.arm_standin import ArmStandIn

# The body of azure-rest-api-specs specification/compute/resource-manager/Microsoft.Compute/GalleryRP/stable/
# 2023-07-03/examples/galleryExamples/GalleryImageVersion_Get_WithVhdAsSource.json (trimmed to what matters):
# ARM names target regions by display name.
VERSION_BODY: dict[str, Any] = {
    "name": "1.0.0",
    "location": "West US",
    "properties": {
        "publishingProfile": {
            "targetRegions": [
                {"name": "West US", "regionalReplicaCount": 1, "storageAccountType": "Standard_LRS"},
                {"name": "East US", "regionalReplicaCount": 2, "storageAccountType": "Standard_LRS"},
            ],
            "replicaCount": 1,
            "publishedDate": "2018-01-01T00:00:00Z",
            "storageAccountType": "Standard_LRS",
        },
        "provisioningState": "Succeeded",
    },
}
# ComputeRP/stable/2024-03-01/examples/imageExamples/Image_Get.json: a managed image has one location.
MANAGED_BODY: dict[str, Any] = {
    "name": "myImage",
    "location": "westus",
    "properties": {"provisioningState": "Succeeded"},
}


def _image_id(sub: str, tail: str) -> str:
    return f"/subscriptions/{sub}/resourceGroups/myResourceGroup/providers/Microsoft.Compute/{tail}"


def _with_login_image(image: str) -> str:
    text = (REPO / "configs" / "ai-training.yaml").read_text(encoding="utf-8")
    pin = ", image: microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801}"  # the preset's pin, replaced by `image`
    login = "login: {vm_size: Standard_D16as_v5, count: 2"
    assert login + pin in text
    return text.replace(login + pin, f"{login}, image: {image}}}")


def _findings(image: str, body: dict[str, Any] | None, location: str = "eastus2") -> list[str]:
    loaded = load_config_text(_with_login_image(image), "lz.yaml")
    ctx = LiveContext(loaded=loaded, location=location, images={image: body})
    return [f.message for f in CustomImageUsable().check(ctx)]


VERSION = _image_id("sub", "galleries/myGalleryName/images/myGalleryImageName/versions/1.0.0")
MANAGED = _image_id("sub", "images/myImage")


def test_gallery_version_replicated_elsewhere_is_refused() -> None:
    assert _findings(VERSION, VERSION_BODY) == ["login: image is available in westus, eastus, not eastus2"]
    assert _findings(VERSION, VERSION_BODY, location="eastus") == []


def test_managed_image_only_in_its_own_location() -> None:
    assert _findings(MANAGED, MANAGED_BODY) == ["login: image is available in westus, not eastus2"]
    assert _findings(MANAGED, MANAGED_BODY, location="westus") == []


def test_missing_image_is_named() -> None:
    [message] = _findings(MANAGED, None)
    assert message.startswith(f"login: image {MANAGED} was not found")


def test_gallery_definition_is_left_to_azure() -> None:
    definition = VERSION.rsplit("/versions/", 1)[0]
    assert _findings(definition, {"name": "myGalleryImageName", "properties": {"hyperVGeneration": "V2"}}) == []


def test_deploy_stops_before_anything_when_the_version_is_not_in_the_region(
    arm: ArmStandIn, tmp_path: Path, run_cli
) -> None:  # type: ignore[no-untyped-def]
    image = _image_id(arm.subscription_id, "galleries/myGalleryName/images/myGalleryImageName/versions/1.0.0")
    arm.world.resources[image.lower()] = {"id": image, "type": "Microsoft.Compute/galleries/images/versions"} | (
        copy.deepcopy(VERSION_BODY)
    )
    zone = tmp_path / "zone" / "lz.yaml"
    zone.parent.mkdir()
    zone.write_text(_with_login_image(image), encoding="utf-8")
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "HPCLZ-CMP-105" in result.stdout and "not eastus2" in result.stdout
    assert "nothing was deployed" in result.stdout
    assert [r for r in arm.log if r.method == "PUT"] == []
    asked = {r.path.lower() for r in arm.log if r.method == "GET"}
    assert image.lower() in asked and image.rsplit("/versions/", 1)[0].lower() in asked  # version and definition


# GalleryRP/stable/2023-07-03/examples/galleryExamples/GalleryImage_Get.json: the definition holds the generation.
DEFINITION_BODY: dict[str, Any] = {
    "name": "myGalleryImageName",
    "location": "West US",
    "properties": {"osType": "Windows", "osState": "Generalized", "hyperVGeneration": "V1"},
}


def _fit(definition: dict[str, Any]) -> list[str]:
    text = (REPO / "configs" / "ai-training.yaml").read_text(encoding="utf-8")
    h100 = "      vm_size: Standard_ND96isr_H100_v5\n      image: microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801\n"
    assert h100 in text  # the preset's pin on the h100 partition, replaced by the gallery version
    text = text.replace(h100, f"      vm_size: Standard_ND96isr_H100_v5\n      image: {VERSION}\n", 1)
    loaded = load_config_text(text, "lz.yaml")
    images = {VERSION: VERSION_BODY, VERSION.rsplit("/versions/", 1)[0]: definition}
    return [f.message for f in CustomImageFitsNodes().check(LiveContext(loaded, "eastus", images=images))]


def test_generation_1_definition_on_an_h100_partition_is_refused() -> None:
    assert _fit(DEFINITION_BODY) == [
        "partition h100: Standard_ND96isr_H100_v5 boots only Generation 2 images; this definition is V1"
    ]
    gen2 = copy.deepcopy(DEFINITION_BODY)
    gen2["properties"]["hyperVGeneration"] = "V2"
    assert _fit(gen2) == []


def test_specialized_definition_is_refused() -> None:
    specialized = copy.deepcopy(DEFINITION_BODY)
    specialized["properties"].update(hyperVGeneration="V2", osState="Specialized")
    assert _fit(specialized) == ["partition h100: the image is Specialized; CycleCloud nodes need Generalized"]
