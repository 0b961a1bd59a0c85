"""Where the stand-in refuses what real ARM refuses, so a deploy that would fail in Azure fails here too.

Each behaviour names its source. ARM itself deploys in incremental mode: resources a template omits are
left untouched (https://learn.microsoft.com/azure/azure-resource-manager/templates/deployment-modes
#incremental-mode); `World` never deletes what a deployment leaves out, so hpclz must delete it itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import Any

AMLFS = "microsoft.storagecache/amlfilesystems"
VNET = "microsoft.network/virtualnetworks"
VAULT = "microsoft.keyvault/vaults"
STORAGE = "microsoft.storage/storageaccounts"
FLOW_LOG = "microsoft.network/networkwatchers/flowlogs"
RS_VAULT = "microsoft.recoveryservices/vaults"
PROTECTED_ITEM = "microsoft.recoveryservices/vaults/backupfabrics/protectioncontainers/protecteditems"
VM = "microsoft.compute/virtualmachines"
# "Network Watcher is automatically enabled in a virtual network's region when you create or update the virtual
# network", as NetworkWatcher_<region> in the group NetworkWatcherRG, unless the subscription opted out
# (learn.microsoft.com/azure/network-watcher/network-watcher-create).
NETWORK_WATCHER_GROUP = "NetworkWatcherRG"

# Properties a provider fixes at creation. Managed Lustre: the azurerm provider marks sku_name,
# storage_capacity_in_tb and subnet_id ForceNew (hashicorp/terraform-provider-azurerm,
# azurerm_managed_lustre_file_system), and Microsoft's docs say capacity and throughput cannot change after
# creation (https://learn.microsoft.com/azure/azure-managed-lustre/create-file-system-portal). Since API
# 2026-01-01 a file system grows in place through a child expansion job (az amlfs expansion create;
# azure-rest-api-specs storagecache stable/2026-01-01 examples/expansionJobs_*.json), and its own
# storageCapacityTiB stays the size it was created with (currentStorageCapacityTiB reports expansions), so a new
# storageCapacityTiB in the file system's PUT is still not the way to resize it. Managed Lustre's own error code
# for such a PUT was searched for and not found (azure-rest-api-specs storagecache examples, azure-cli and
# terraform-provider-azurerm issues, Microsoft Learn AMLFS pages, the Lustre CSI driver's error guide);
# PropertyChangeNotAllowed is the code ARM providers (Compute, for one) return for a changed immutable
# property, so the stand-in uses it as an analogy, not as Managed Lustre's recorded answer.
IMMUTABLE: dict[str, tuple[str, ...]] = {
    AMLFS: ("sku.name", "properties.storageCapacityTiB", "properties.filesystemSubnet"),
    # A storage account's kind changes only Storage/BlobStorage -> StorageV2 (a one-way upgrade):
    # https://learn.microsoft.com/azure/storage/common/storage-account-upgrade
    STORAGE: ("kind",),
}
UPGRADES = {(STORAGE, "kind"): {("Storage", "StorageV2"), ("BlobStorage", "StorageV2")}}


@dataclass
class Refusal:
    code: str
    message: str


@dataclass
class GlobalNames:
    """Names that are global across Azure (storage accounts, vaults) and vaults in soft-deleted state."""

    taken: set[tuple[str, str]] = field(default_factory=set)  # (type, name) held by someone else's subscription
    deleted_vaults: dict[str, bool] = field(default_factory=dict)  # name -> purge protection on


def _get(body: dict[str, Any], path: str) -> Any:
    node: Any = body
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def immutable_change(rtype: str, name: str, old: dict[str, Any], new: dict[str, Any]) -> Refusal | None:
    for path in IMMUTABLE.get(rtype.lower(), ()):
        before, after = _get(old, path), _get(new, path)
        upgrade = (before, after) in UPGRADES.get((rtype.lower(), path), set())
        if after is None or before == after or upgrade:
            continue
        return Refusal(
            "PropertyChangeNotAllowed",
            f"Changing property '{path.rsplit('.', 1)[-1]}' is not allowed for resource '{name}'.",
        )
    return None


def subnets_in_use(old: dict[str, Any], new: dict[str, Any], others: list[dict[str, Any]]) -> Refusal | None:
    """A VNet PUT that changes or drops a subnet something sits in: a subnet's range changes only while it
    holds no resources (https://learn.microsoft.com/azure/virtual-network/virtual-network-manage-subnet
    #change-subnet-settings). The codes are the network provider's InUseSubnetCannotBeUpdated and
    InUseSubnetCannotBeDeleted, which deployment scripts in public repositories catch by name."""
    before = {s["name"]: s.get("properties") or {} for s in (old.get("properties") or {}).get("subnets") or []}
    after = {s["name"]: s.get("properties") or {} for s in (new.get("properties") or {}).get("subnets") or []}
    users = json.dumps(others).lower()
    for subnet, props in before.items():
        subnet_id = f"{old['id']}/subnets/{subnet}".lower()
        if subnet_id not in users:
            continue
        if subnet not in after:
            return Refusal(
                "InUseSubnetCannotBeDeleted",
                f"Subnet {subnet} is in use and cannot be deleted. In order to delete the subnet, delete all the "
                "resources within the subnet.",
            )
        if after[subnet].get("addressPrefix") != props.get("addressPrefix"):
            return Refusal("InUseSubnetCannotBeUpdated", f"Subnet {subnet} is in use and cannot be updated.")
    return None


def _inside(subnet: IPv4Network | IPv6Network, space: IPv4Network | IPv6Network) -> bool:
    """A subnet fits a range of its own address family; subnet_of raises TypeError across families, which would
    end the check at a dual-stack VNet's IPv6 range before its IPv4 one was tried."""
    if isinstance(subnet, IPv4Network) and isinstance(space, IPv4Network):
        return subnet.subnet_of(space)
    if isinstance(subnet, IPv6Network) and isinstance(space, IPv6Network):
        return subnet.subnet_of(space)
    return False


def subnets_outside(new: dict[str, Any]) -> Refusal | None:
    """A VNet whose subnets do not all fit its address space, as after removing a range still in use. The code
    and message are the network provider's, as `az network vnet subnet create` prints them (captured in public
    repositories): "(NetcfgSubnetRangeOutsideVnet) Subnet 'subnet-alb' is not valid because its IP address range
    is outside the IP address range of virtual network 'aks-vnet-34152116'."."""
    props = new.get("properties") or {}
    try:
        spaces = [ip_network(p) for p in (props.get("addressSpace") or {}).get("addressPrefixes") or []]
        for subnet in props.get("subnets") or []:
            prefix = (subnet.get("properties") or {}).get("addressPrefix")
            if prefix and spaces and not any(_inside(ip_network(prefix), s) for s in spaces):
                return Refusal(
                    "NetcfgSubnetRangeOutsideVnet",
                    f"Subnet '{subnet['name']}' is not valid because its IP address range is outside the IP address "
                    f"range of virtual network '{new.get('name')}'.",
                )
    except (ValueError, TypeError):
        return None  # an unresolved value: ARM would have refused the template first
    return None


def name_conflict(names: GlobalNames, rtype: str, name: str) -> Refusal | None:
    """Global names. StorageAccountAlreadyTaken: https://learn.microsoft.com/azure/azure-resource-manager/
    troubleshooting/error-storage-account-name. A soft-deleted vault keeps its name for its retention period
    (https://learn.microsoft.com/azure/key-vault/general/soft-delete-overview); creating one with that name
    fails with ConflictError "A vault with the same name already exists in deleted state", as users report it."""
    key = (rtype.lower(), name.lower())
    if key in names.taken and key[0] == STORAGE:
        return Refusal("StorageAccountAlreadyTaken", f"The storage account named {name} is already taken.")
    if key in names.taken and key[0] == VAULT:  # the code as users report it; the message is ours
        return Refusal("VaultAlreadyExists", f"The vault name '{name}' is already in use.")
    if key[0] == VAULT and name.lower() in names.deleted_vaults:
        return Refusal(
            "ConflictError",
            "A vault with the same name already exists in deleted state. You need to either recover or purge "
            "existing key vault.",
        )
    return None


def soft_delete(names: GlobalNames, resource: dict[str, Any]) -> None:
    """Deleting a vault with soft delete on (always on since 2020) keeps its name reserved."""
    if str(resource.get("type", "")).lower() == VAULT:
        props = resource.get("properties") or {}
        names.deleted_vaults[str(resource["name"]).lower()] = bool(props.get("enablePurgeProtection"))


def network_watcher_for(subscription: str, location: str) -> tuple[str, dict[str, Any]]:
    """The watcher Azure creates for a region: (its group, its body as GET returns it)."""
    name = f"NetworkWatcher_{location}"
    rid = f"/subscriptions/{subscription}/resourceGroups/{NETWORK_WATCHER_GROUP}/providers/Microsoft.Network/networkWatchers/{name}"
    body = {
        "id": rid,
        "name": name,
        "type": "Microsoft.Network/networkWatchers",
        "location": location,
        "tags": {},
        "properties": {"provisioningState": "Succeeded"},
    }
    return NETWORK_WATCHER_GROUP, body


def parent_missing(rtype: str, rid: str, resources: dict[str, dict[str, Any]]) -> Refusal | None:
    """A flow log is a child of its Network Watcher; ARM refuses a child whose parent does not exist with
    ParentResourceNotFound ("Can not perform requested operation on nested resource. Parent resource '<name>' not
    found.", the Resource Manager error for nested resources)."""
    if rtype.lower() != FLOW_LOG:
        return None
    parent = rid.rsplit("/", 2)[0]
    if parent.lower() in resources:
        return None
    name = parent.rsplit("/", 1)[-1]
    return Refusal(
        "ParentResourceNotFound",
        f"Can not perform requested operation on nested resource. Parent resource '{name}' not found.",
    )


def soft_deletes_backups(vault: dict[str, Any] | None) -> bool:
    """Whether deleting a protected item leaves its backups soft-deleted in the vault: soft delete is on by default
    for Recovery Services vaults (learn.microsoft.com/azure/backup/backup-azure-security-feature-cloud)."""
    settings = ((vault or {}).get("properties") or {}).get("securitySettings") or {}
    state = (settings.get("softDeleteSettings") or {}).get("softDeleteState", "Enabled")
    return str(state) in ("Enabled", "AlwaysON")


def vault_not_empty(vault_id: str, resources: dict[str, dict[str, Any]], soft_deleted: list[str]) -> Refusal | None:
    """Azure refuses to delete a vault that holds backup items, protected or soft-deleted: "Vault cannot be deleted
    as there are existing resources within the vault. : <container>\nUnregister all containers from the vault and
    then retry to delete vault." (code ServiceResourceNotEmptyWithContainerDetails, as Azure returned it in
    MicrosoftDocs/azure-docs issue 42016; the same wording in Azure/azure-cli issue 7619)."""
    prefix = vault_id.lower() + "/"
    live = [k for k, r in resources.items() if k.startswith(prefix) and str(r["type"]).lower() == PROTECTED_ITEM]
    containers = sorted({k.split("/protectioncontainers/")[1].split("/")[0] for k in live} | set(soft_deleted))
    if not containers:
        return None
    return Refusal(
        "ServiceResourceNotEmptyWithContainerDetails",
        "Vault cannot be deleted as there are existing resources within the vault. : "
        + ", ".join(containers)
        + "\nUnregister all containers from the vault and then retry to delete vault. "
        "For instructions, see https://aka.ms/AB-AA4ecq5",
    )


def _guest_patching_images() -> set[tuple[str, str, str]]:
    """The Linux images Azure's automatic VM guest patching page lists, as hpclz ships that list (data, not
    hpclz's code: MicrosoftDocs/azure-compute-docs@0ba239a articles/virtual-machines/automatic-vm-guest-patching.md)."""
    raw = json.loads(resources.files("hpclz.catalog").joinpath("guest_patching.json").read_text(encoding="utf-8"))
    return {(r["publisher"].lower(), r["offer"].lower(), r["sku"].lower()) for r in raw["linux"]}


def guest_patching_unsupported(rtype: str, body: dict[str, Any]) -> Refusal | None:
    """A VM PUT with patchMode AutomaticByPlatform whose image is not on the list: "This mode is only supported for
    VMs that are created using the supported OS platform images" (the page above). ARM's answer is not documented
    there; this is the one deployments captured: InvalidParameter, target `...patchSettings.patchMode`, "The
    selected VM image is not supported for VM Guest patch operations. Learn more at:
    https://aka.ms/VMGuestPatchingCompatibility" (hashicorp/packer-plugin-azure#453, a Windows image)."""
    if rtype.lower() != VM:
        return None
    mode = _get(body, "properties.osProfile.linuxConfiguration.patchSettings.patchMode")
    if mode != "AutomaticByPlatform":
        return None
    image = _get(body, "properties.storageProfile.imageReference") or {}
    key = tuple(str(image.get(k) or "").lower() for k in ("publisher", "offer", "sku"))
    if key in _guest_patching_images():
        return None
    return Refusal(
        "InvalidParameter",
        "The selected VM image is not supported for VM Guest patch operations. Learn more at: "
        "https://aka.ms/VMGuestPatchingCompatibility",
    )
