"""The ARM stand-in refuses what ARM refuses (tests/support/arm_standin/behaviours.py), driven through
the real SDK clients: each case names the behaviour's source."""

from __future__ import annotations

from typing import Any

from hpclz.azure.arm import Arm, deployment_body
from hpclz.render.model import Deployment
from tests.support.arm_standin import ArmStandIn
from tests.support.standin_deployments import finished


def deployment(name: str, *resources: dict[str, Any]) -> Deployment:
    return Deployment(
        name=name,
        component="storage",
        scope="resourceGroup",
        resource_group="rg1",
        location="eastus2",
        template={"resources": list(resources)},
    )


def run(arm: Arm, d: Deployment) -> dict[str, Any]:
    arm.submit(d, deployment_body(d, {}, {}))
    return finished(arm, d)


def inner_code(remote: dict[str, Any]) -> str:
    code: str = remote["properties"]["error"]["details"][0]["details"][0]["code"]
    return code


def lustre(capacity: int) -> dict[str, Any]:
    return {
        "type": "Microsoft.StorageCache/amlFilesystems",
        "apiVersion": "2024-03-01",
        "name": "amlfs1",
        "location": "eastus2",
        "sku": {"name": "AMLFS-Durable-Premium-250"},
        "properties": {"storageCapacityTiB": capacity},
    }


def vnet(prefix: str) -> dict[str, Any]:
    return {
        "type": "Microsoft.Network/virtualNetworks",
        "apiVersion": "2024-05-01",
        "name": "vnet1",
        "location": "eastus2",
        "properties": {
            "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": [{"name": "admin", "properties": {"addressPrefix": prefix}}],
        },
    }


NIC = {
    "type": "Microsoft.Network/networkInterfaces",
    "apiVersion": "2024-05-01",
    "name": "nic1",
    "location": "eastus2",
    "properties": {
        "ipConfigurations": [
            {
                "name": "ipconfig1",
                "properties": {
                    "subnet": {"id": "[resourceId('Microsoft.Network/virtualNetworks/subnets', 'vnet1', 'admin')]"}
                },
            }
        ]
    },
}


def test_lustre_capacity_cannot_change_in_place(adapter: Arm) -> None:
    assert run(adapter, deployment("fs", lustre(48)))["properties"]["provisioningState"] == "Succeeded"
    failed = run(adapter, deployment("fs", lustre(96)))
    assert failed["properties"]["provisioningState"] == "Failed"
    assert inner_code(failed) == "PropertyChangeNotAllowed"


def test_subnet_in_use_cannot_be_renumbered(arm: ArmStandIn, adapter: Arm) -> None:
    assert run(adapter, deployment("net", vnet("10.0.0.0/24"), NIC))["properties"]["provisioningState"] == "Succeeded"
    failed = run(adapter, deployment("net", vnet("10.0.3.0/24"), NIC))
    assert inner_code(failed) == "InUseSubnetCannotBeUpdated"
    assert run(adapter, deployment("net", vnet("10.0.0.0/24"), NIC))["properties"]["provisioningState"] == "Succeeded"


def test_a_subnet_nothing_uses_can_be_renumbered(adapter: Arm) -> None:
    assert run(adapter, deployment("net", vnet("10.0.0.0/24")))["properties"]["provisioningState"] == "Succeeded"
    assert run(adapter, deployment("net", vnet("10.0.3.0/24")))["properties"]["provisioningState"] == "Succeeded"


def test_incremental_mode_leaves_omitted_resources(arm: ArmStandIn, adapter: Arm) -> None:
    assert run(adapter, deployment("net", vnet("10.0.0.0/24"), NIC))["properties"]["provisioningState"] == "Succeeded"
    assert run(adapter, deployment("net", vnet("10.0.0.0/24")))["properties"]["provisioningState"] == "Succeeded"
    assert any(k.endswith("/networkinterfaces/nic1") for k in arm.world.resources)


def test_global_names_taken_elsewhere(arm: ArmStandIn, adapter: Arm) -> None:
    arm.world.names.taken |= {
        ("microsoft.storage/storageaccounts", "sttaken"),
        ("microsoft.keyvault/vaults", "kv-taken"),
    }
    account = {
        "type": "Microsoft.Storage/storageAccounts",
        "apiVersion": "2023-05-01",
        "name": "sttaken",
        "location": "eastus2",
        "sku": {"name": "Standard_LRS"},
        "kind": "StorageV2",
    }
    assert inner_code(run(adapter, deployment("st", account))) == "StorageAccountAlreadyTaken"
    vault = {
        "type": "Microsoft.KeyVault/vaults",
        "apiVersion": "2023-07-01",
        "name": "kv-taken",
        "location": "eastus2",
        "properties": {"tenantId": "00000000-0000-0000-0000-00000000aaaa", "sku": {"family": "A", "name": "standard"}},
    }
    assert inner_code(run(adapter, deployment("kv", vault))) == "VaultAlreadyExists"


def test_a_deleted_vault_keeps_its_name(arm: ArmStandIn, adapter: Arm) -> None:
    vault = {
        "type": "Microsoft.KeyVault/vaults",
        "apiVersion": "2023-07-01",
        "name": "kv-soft",
        "location": "eastus2",
        "properties": {
            "tenantId": "00000000-0000-0000-0000-00000000aaaa",
            "sku": {"family": "A", "name": "standard"},
            "enablePurgeProtection": True,
        },
    }
    assert run(adapter, deployment("kv", vault))["properties"]["provisioningState"] == "Succeeded"
    vault_id = next(r["id"] for r in arm.world.resources.values() if r["name"] == "kv-soft")
    adapter.delete_resource(vault_id, "2023-07-01")
    assert arm.world.names.deleted_vaults == {"kv-soft": True}  # soft-deleted, purge protection on
    assert inner_code(run(adapter, deployment("kv", vault))) == "ConflictError"


def test_storage_kind_upgrades_one_way_only(adapter: Arm) -> None:
    def account(kind: str) -> dict[str, Any]:
        return {
            "type": "Microsoft.Storage/storageAccounts",
            "apiVersion": "2023-05-01",
            "name": "stkind",
            "location": "eastus2",
            "sku": {"name": "Standard_LRS"},
            "kind": kind,
        }

    assert run(adapter, deployment("st", account("Storage")))["properties"]["provisioningState"] == "Succeeded"
    assert run(adapter, deployment("st", account("StorageV2")))["properties"]["provisioningState"] == "Succeeded"
    assert inner_code(run(adapter, deployment("st", account("BlobStorage")))) == "PropertyChangeNotAllowed"


def test_an_address_range_cannot_go_while_a_subnet_uses_it(adapter: Arm) -> None:
    assert run(adapter, deployment("net", vnet("10.0.0.0/24")))["properties"]["provisioningState"] == "Succeeded"
    shrunk = vnet("10.0.0.0/24")
    shrunk["properties"]["addressSpace"]["addressPrefixes"] = ["10.1.0.0/16"]
    failed = run(adapter, deployment("net", shrunk))
    assert inner_code(failed) == "NetcfgSubnetRangeOutsideVnet"
    assert "Subnet 'admin' is not valid because its IP address range is outside" in str(failed["properties"]["error"])


def test_a_dual_stack_vnet_checks_each_subnet_against_its_own_address_family(adapter: Arm) -> None:
    """A VNet's address space may hold IPv4 and IPv6 ranges together
    (https://learn.microsoft.com/azure/virtual-network/ip-services/ipv6-overview): an IPv4 subnet outside the
    IPv4 range is refused though an IPv6 range is listed first."""
    dual = vnet("10.1.0.0/24")
    dual["properties"]["addressSpace"]["addressPrefixes"] = ["fd00:db8::/48", "10.0.0.0/16"]
    assert inner_code(run(adapter, deployment("net", dual))) == "NetcfgSubnetRangeOutsideVnet"
    dual["properties"]["subnets"][0]["properties"]["addressPrefix"] = "10.0.1.0/24"
    assert run(adapter, deployment("net", dual))["properties"]["provisioningState"] == "Succeeded"


def vm(publisher: str, offer: str, sku: str) -> dict[str, Any]:
    return {
        "type": "Microsoft.Compute/virtualMachines",
        "apiVersion": "2024-07-01",
        "name": "vm1",
        "location": "eastus2",
        "properties": {
            "osProfile": {
                "computerName": "vm1",
                "adminUsername": "azureuser",
                "linuxConfiguration": {
                    "patchSettings": {
                        "patchMode": "AutomaticByPlatform",
                        "automaticByPlatformSettings": {"bypassPlatformSafetyChecksOnUserSchedule": True},
                    }
                },
            },
            "storageProfile": {
                "imageReference": {"publisher": publisher, "offer": offer, "sku": sku, "version": "latest"}
            },
        },
    }


def test_platform_patching_is_refused_on_an_image_azure_does_not_patch(adapter: Arm) -> None:
    """AutomaticByPlatform only on the images automatic-vm-guest-patching lists; the CycleCloud image is not one
    (ARM's answer as captured in hashicorp/packer-plugin-azure#453)."""
    failed = run(adapter, deployment("cc", vm("azurecyclecloud", "azure-cyclecloud", "cyclecloud8-gen2")))
    assert failed["properties"]["provisioningState"] == "Failed"
    assert inner_code(failed) == "InvalidParameter"
    assert "not supported for VM Guest patch operations" in str(failed["properties"]["error"])
    listed = run(adapter, deployment("ood", vm("Canonical", "0001-com-ubuntu-server-jammy", "22_04-lts-gen2")))
    assert listed["properties"]["provisioningState"] == "Succeeded"
