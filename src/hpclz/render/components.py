"""Per-component template context: derived values a template needs beyond the shared Zone.

Storage and monitoring live in hpclz.render.storage and hpclz.render.monitoring.
"""

from __future__ import annotations

from typing import Any

from hpclz.catalog.guest_patching import platform_patching_supported
from hpclz.catalog.versions import CYCLECLOUD_IMAGE, marketplace_image
from hpclz.config.compute import CycleCloud
from hpclz.config.identity import secret_parameter_name
from hpclz.errors import ExitCode, HpclzError
from hpclz.naming import CYCLECLOUD_LABEL
from hpclz.render.arm import RG_TEMPLATE_SCHEMA, SUBSCRIPTION_TEMPLATE_SCHEMA, expr
from hpclz.render.cloudinit import (
    WHEEL_PARAMETER,
    WHEEL_TAG,
    accelerated,
    cluster_files,
    custom_data,
    server_cloud_config,
    user_data,
    user_data_document,
)
from hpclz.render.entra import app_roles_file
from hpclz.render.monitoring import vm_agent
from hpclz.render.nsg import security_rules
from hpclz.render.roles import (
    assignments,
    cyclecloud_network_assignments,
    cyclecloud_subscription_assignments,
    entra_login,
    identity_path,
)
from hpclz.render.zone import SubnetView, Zone


def network(zone: Zone) -> dict[str, Any]:
    # The subnets the cluster's VMs (CycleCloud, scheduler, login, portal, nodes) sit in: the only NFS clients of
    # storage.shared's share.
    cluster = [v.cidr for v in zone.subnets if v.hosts_vms] if zone.shared_files else None

    def nsg_rules(view: SubnetView) -> list[dict[str, Any]]:
        return security_rules(view, zone.config.network.nsg_rules, cluster)

    return {"nsg_rules": nsg_rules, "assignments": assignments(zone, "network")}


def identity_secrets(zone: Zone) -> dict[str, str]:
    """secureString parameter -> config path of its secret (Deployment.secure_parameters)."""
    kv = zone.key_vault_new
    if kv is None:
        return {}
    out: dict[str, str] = {}
    seen: dict[str, str] = {}  # ARM compares parameter names without case
    for name in sorted(kv.secrets):
        parameter = secret_parameter_name(name)
        if parameter.lower() in seen:
            raise HpclzError(
                f"identity.key_vault.secrets: {seen[parameter.lower()]!r} and {name!r} both become template "
                f"parameter {parameter}; rename one",
                exit_code=ExitCode.CONFIG_INVALID,
            )
        seen[parameter.lower()] = name
        out[parameter] = f"identity.key_vault.secrets.{name}"
    return out


def identity(zone: Zone) -> dict[str, Any]:
    return {"assignments": assignments(zone, "management"), "identity_path": identity_path}


def cyclecloud_image(cc: CycleCloud, vm_name: str) -> dict[str, Any]:
    """The CycleCloud server's image as CCWS deploys it (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/ccw.bicep:
    121-149, bicep/vm.bicep:46-50,59-70), of the release the server was created from (`image_release`), never of the
    release it runs now: an in-place upgrade moves that on without ARM seeing a new imageReference. Microsoft's Marketplace image of the pinned release, with its purchase plan
    (publisher, product, name = the URN's first three parts) and its data disk created from the image
    (`FromImage`, Premium_LRS, ReadWrite caching) for the azurecyclecloud publisher. A config-given URN of
    another publisher keeps CCWS's other branch: no plan unless the image is azurecyclecloud's, an empty 128 GB disk."""
    urn = cc.image or marketplace_image(cc.server_image_release)
    if urn is None:  # HPCLZ-CMP-017 refuses such a version before render is asked
        field = "image_release" if cc.image_release else "version"
        raise HpclzError(
            f"compute.cyclecloud.{field}: no CycleCloud image is known for {cc.server_image_release}; set "
            "compute.cyclecloud.image",
            exit_code=ExitCode.CONFIG_INVALID,
        )
    publisher, offer, sku, version = urn.split(":")
    ours = publisher == CYCLECLOUD_IMAGE[0]
    disk: dict[str, Any] = {
        "name": f"{vm_name}-datadisk0",
        "lun": 0,
        "createOption": "FromImage" if ours else "Empty",
        "caching": "ReadWrite",
        "managedDisk": {"storageAccountType": "Premium_LRS"},
    }
    if not ours:
        disk["diskSizeGB"] = 128
    return {
        "reference": {"publisher": publisher, "offer": offer, "sku": sku, "version": version},
        "plan": {"publisher": publisher, "product": offer, "name": sku} if ours else None,
        "data_disks": [disk],
    }


def compute(zone: Zone) -> dict[str, Any]:
    files = cluster_files(zone)
    cloud_config = server_cloud_config(zone)
    document = user_data_document(zone, files)
    image = cyclecloud_image(zone.config.compute.cyclecloud, zone.names.cyclecloud_vm())
    has_identity = zone.config.identity.managed_identities.scheduler
    agent = vm_agent(zone)
    server = {
        "name": zone.names.cyclecloud_vm(),
        "computer_name": f"{zone.config.metadata.name}-cyclecloud",
        "nic": zone.names.name("network_interface", CYCLECLOUD_LABEL),
        "accelerated": accelerated(zone, zone.config.compute.cyclecloud.vm_size),
        "identity": expr(zone.identity_id("scheduler")) if has_identity else None,
        "image": image["reference"],
        "plan": image["plan"],
        "data_disks": image["data_disks"],
        "custom_data": custom_data(cloud_config),
        "user_data": user_data(document),
        # string(...), not a bare reference: offline plans resolve `[parameters('x')]` to its default, and this value
        # is known only at deploy time (hpclz.deploy.wheel_step), so drift must not compare it.
        "tags": {**zone.tags(), WHEEL_TAG: f"[string(parameters('{WHEEL_PARAMETER}'))]"},
        # The VM login roles below mean nothing without the Entra ID SSH extension, which needs the VM's
        # system-assigned identity (learn.microsoft.com/entra/identity/devices/howto-vm-sign-in-azure-ad-linux).
        "entra_ssh": entra_login(zone),
        # CycleCloud's Entra ID service account is this VM's system-assigned identity, as in CCWS
        # (Azure/cyclecloud-slurm-workspace@bc0fc1b: bicep/vm.bicep SystemAssigned, its principalId in install.sh).
        "system_identity": entra_login(zone) or zone.config.identity.cyclecloud_entra is not None,
        "zone": zone.config.compute.service_zone,
        "patch_mode": patch_mode(zone, image["reference"]),
        "agent": agent,
    }
    artifacts = {f"cyclecloud/{name}": text for name, text in files.items()}
    artifacts["cloud-init/cyclecloud-server.yaml"] = cloud_config
    roles = app_roles_file(zone)
    if roles is not None:  # read by people and `hpclz deploy`'s next steps, never by a VM
        artifacts["cyclecloud/entra-app-roles.json"] = roles
    artifacts["cloud-init/cyclecloud-userdata.json"] = document
    return {
        "server": server,
        "assignments": assignments(zone, "compute"),
        "nested_assignments": _cyclecloud_scopes(zone),
        "artifacts": artifacts,
        "parameters": {"cycleCloudVmSize": zone.config.compute.cyclecloud.vm_size},
    }


def _cyclecloud_scopes(zone: Zone) -> list[dict[str, Any]]:
    """CycleCloud's roles outside the compute group: subnet join on the VNet, reads at subscription scope."""
    prefix = zone.names.name("virtual_machine", "cc")
    out: list[dict[str, Any]] = []
    network = cyclecloud_network_assignments(zone)
    if network:
        out.append(
            {
                "name": f"{prefix}-network-roles",
                "group": zone.rg["network"],
                "path": "identity.managed_identities.scheduler",
                "schema": RG_TEMPLATE_SCHEMA,
                "assignments": network,
            }
        )
    subscription = cyclecloud_subscription_assignments(zone)
    if subscription:
        out.append(
            {
                "name": f"{prefix}-subscription-roles",
                "group": None,
                "path": "identity.managed_identities.scheduler",
                "schema": SUBSCRIPTION_TEMPLATE_SCHEMA,
                "assignments": subscription,
            }
        )
    return out


def maintenance_enabled(zone: Zone) -> bool:
    return zone.config.maintenance.window is not None


def guest_patch_scope(zone: Zone) -> bool:
    return maintenance_enabled(zone) and zone.config.maintenance.scope == "InGuestPatch"


PLATFORM_PATCHING = "AutomaticByPlatform"


def patch_mode(zone: Zone, image: dict[str, Any]) -> str | None:
    """How a service VM (CycleCloud server, portal) is patched under an InGuestPatch window.

    `AutomaticByPlatform` (the platform patches it in the window the configuration assigned to it sets) only where
    Azure patches its image: that mode "is only supported for VMs that are created using the supported OS platform
    images" (learn.microsoft.com/azure/virtual-machines/automatic-vm-guest-patching#patch-orchestration-modes;
    hpclz.catalog.guest_patching). Any other image, the CycleCloud server's azurecyclecloud one among them, gets
    `ImageDefault`, the Linux default ("set by default if no other patch mode is specified"), written out so that a
    server created under AutomaticByPlatform is changed back ("To disable automatic VM guest patching on a Linux VM,
    change the patch mode to ImageDefault", the same page). None outside an InGuestPatch window: nothing rendered."""
    if not guest_patch_scope(zone):
        return None
    return PLATFORM_PATCHING if platform_patching_supported(image) else "ImageDefault"


def maintenance(zone: Zone) -> dict[str, Any]:
    """The configuration, and the CycleCloud server it is assigned to: under InGuestPatch only where Azure patches
    the server's image (patch_mode); a Host-scope window is Azure's own work, on any image."""
    vm_name = zone.names.cyclecloud_vm()
    image = cyclecloud_image(zone.config.compute.cyclecloud, vm_name)["reference"]
    assigned = not guest_patch_scope(zone) or platform_patching_supported(image)
    return {"mc_name": zone.names.name("maintenance_configuration"), "vm_name": vm_name if assigned else None}


# Sub-plan per pricing name (learn.microsoft.com/rest/api/defenderforcloud/pricings/update). StorageAccounts takes
# DefenderForStorageV2, the per-storage-account plan: the classic per-transaction plan (no sub-plan) has no malware
# scanning and takes no new subscriptions (learn.microsoft.com/azure/defender-for-cloud/defender-for-storage-classic).
# KeyVaults and Arm have no sub-plan here: "When not specified, full plan is applied" (the 2024-01-01 schema).
STORAGE_SUB_PLAN = "DefenderForStorageV2"


def defender_enabled(zone: Zone) -> bool:
    return bool(zone.config.defender.plans)


def defender(zone: Zone) -> dict[str, Any]:
    settings = zone.config.defender
    sub_plans = {"VirtualMachines": settings.servers_sub_plan, "StorageAccounts": STORAGE_SUB_PLAN}
    plans = [{"name": name, "sub_plan": sub_plans.get(name)} for name in sorted(set(settings.plans))]
    return {"plans": plans, "enforce": "True" if settings.enforce else "False"}
