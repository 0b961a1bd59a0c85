"""Platform guest patching (patchMode AutomaticByPlatform and an InGuestPatch assignment) only for VMs whose image
Azure patches: "supported only on VMs created from images with the exact combination of publisher, offer and sku
from the below supported OS images list" (learn.microsoft.com/azure/virtual-machines/automatic-vm-guest-patching,
MicrosoftDocs/azure-compute-docs@0ba239a; hpclz/catalog/guest_patching.json)."""

from __future__ import annotations

from typing import Any

import pytest

from hpclz.catalog.guest_patching import platform_patching_supported
from hpclz.render.model import Deployment, DeploymentPlan
from tests.render.conftest import preset_plan, variant

ASSIGNMENT = "Microsoft.Maintenance/configurationAssignments"
VM = "Microsoft.Compute/virtualMachines"


def _deployment(plan: DeploymentPlan, component: str) -> Deployment:
    return next(d for d in plan.deployments if d.component == component)


def _of(deployment: Deployment, type_: str) -> list[dict[str, Any]]:
    return [r for r in deployment.template["resources"] if r["type"] == type_]


def _patch_settings(deployment: Deployment) -> Any:
    (vm,) = _of(deployment, VM)
    return vm["properties"]["osProfile"]["linuxConfiguration"].get("patchSettings")


@pytest.mark.parametrize("preset", ["ai-training", "energy", "finance"])
def test_the_cyclecloud_server_is_not_put_under_platform_patching(preset: str) -> None:
    """The azurecyclecloud image is not on the list: ImageDefault, written out, and no assignment to the server."""
    plan = preset_plan(preset)
    assert _patch_settings(_deployment(plan, "compute")) == {
        "patchMode": "ImageDefault",
        "assessmentMode": "ImageDefault",
    }
    maintenance = _deployment(plan, "maintenance")
    (configuration,) = _of(maintenance, "Microsoft.Maintenance/maintenanceConfigurations")
    assert configuration["properties"]["maintenanceScope"] == "InGuestPatch"
    assert not _of(maintenance, ASSIGNMENT)


def test_a_listed_server_image_keeps_platform_patching_and_its_assignment() -> None:
    """A server booted from a listed image (Canonical's Ubuntu 22.04 gen2) is patched by the platform in the window."""

    def edit(data: dict[str, Any]) -> None:
        data["compute"]["cyclecloud"]["image"] = "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest"

    plan = variant("ai-training", edit)
    settings = _patch_settings(_deployment(plan, "compute"))
    assert settings["patchMode"] == "AutomaticByPlatform"
    assert settings["automaticByPlatformSettings"] == {"bypassPlatformSafetyChecksOnUserSchedule": True}
    (assignment,) = _of(_deployment(plan, "maintenance"), ASSIGNMENT)
    assert assignment["scope"] == "Microsoft.Compute/virtualMachines/vm-aitrain-cc-prod-eus2"


def test_a_portal_on_an_unlisted_image_gets_no_assignment() -> None:
    def edit(data: dict[str, Any]) -> None:
        data["portal"]["image"] = "almalinux:almalinux-x86_64:8-gen2:latest"

    portal = _deployment(variant("ai-training", edit), "portal")
    assert _patch_settings(portal) == {"patchMode": "ImageDefault", "assessmentMode": "ImageDefault"}
    assert not _of(portal, ASSIGNMENT)


def test_a_host_scope_window_assigns_the_server_whatever_its_image() -> None:
    """Host maintenance is Azure's work on the host, not the guest: no patch mode, the assignment as before."""

    def edit(data: dict[str, Any]) -> None:
        data["maintenance"]["scope"] = "Host"

    plan = variant("ai-training", edit)
    assert _patch_settings(_deployment(plan, "compute")) is None
    assert len(_of(_deployment(plan, "maintenance"), ASSIGNMENT)) == 1


@pytest.mark.parametrize(
    ("reference", "supported"),
    [
        ({"publisher": "Canonical", "offer": "0001-com-ubuntu-server-jammy", "sku": "22_04-lts-gen2"}, True),
        ({"publisher": "canonical", "offer": "0001-COM-ubuntu-server-jammy", "sku": "22_04-LTS-gen2"}, True),
        ({"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204"}, True),
        ({"publisher": "azurecyclecloud", "offer": "azure-cyclecloud", "sku": "cyclecloud8-gen2"}, False),
        ({"publisher": "Canonical", "offer": "0001-com-ubuntu-server-jammy", "sku": "22_04-lts-gen3"}, False),
        ({"id": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/galleries/g/images/i"}, False),
        ("[parameters('image')]", False),
    ],
)
def test_only_the_exact_publisher_offer_sku_is_supported(reference: Any, supported: bool) -> None:
    assert platform_patching_supported(reference) is supported
