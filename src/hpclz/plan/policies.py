"""What changing an ARM property costs, per resource type: the table behind every resource verdict.

ARM updates most properties with an idempotent PUT, so the default is "in place". The entries
below are the exceptions: properties a resource provider refuses to change after creation (so
hpclz must delete and recreate the resource, or cannot do it at all), and properties whose change
reboots or reimages VMs. Each entry names its source. Paths use `[*]` for any list item.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from ipaddress import ip_network
from typing import Any

from hpclz.plan import server_rebuild
from hpclz.plan.changeset import Policy, Verdict
from hpclz.render.model import DATA_BEARING_TYPES

Evaluate = Callable[[Any, Any, Any], Verdict]  # (before, after, context: the whole new resource body or config)

DOCS = "https://learn.microsoft.com/azure"


@dataclass(frozen=True)
class PropertyRule:
    path: str
    verdict: Verdict | Evaluate

    def evaluate(self, before: Any, after: Any, context: Any = None) -> Verdict:
        return self.verdict(before, after, context) if callable(self.verdict) else self.verdict


def _v(policy: Policy, reason: str, action_needed: str = "", source: str = "") -> Verdict:
    return Verdict(policy=policy, reason=reason, action_needed=action_needed, source=source)


NFS_CONVERSION_ACTION = (
    "unmount the volume on every node first (jobs using it stop), then remount it with the new NFS version: "
    "the nodes' mounts follow the cluster definition when they restart"
)
NFS_CONVERSION = Verdict(
    policy=Policy.RESTART_NODES,
    reason="the volume is converted between NFSv3 and NFSv4.1 in place: its data and snapshots stay",
    action_needed=NFS_CONVERSION_ACTION,
    source="https://learn.microsoft.com/azure/azure-netapp-files/convert-nfsv3-nfsv41",
)


def _networks(value: Any) -> list[Any]:
    items = value if isinstance(value, list) else [value] if value else []
    out = []
    for item in items:
        try:
            out.append(ip_network(str(item), strict=False))
        except ValueError:
            return []  # an ARM expression: cannot reason about it offline
    return out


def subnet_prefixes(context: Any) -> list[Any] | None:
    """Subnet ranges in a VNet body (properties.subnets) or a config snapshot (network.vnet.subnets)."""
    if not isinstance(context, dict):
        return None
    if "network" in context:
        subnets = ((context.get("network") or {}).get("vnet") or {}).get("subnets") or {}
        return _networks([s["cidr"] for s in subnets.values() if isinstance(s, dict) and "cidr" in s])
    items = (context.get("properties") or {}).get("subnets")
    if not isinstance(items, list):
        return None
    return _networks([(i.get("properties") or {}).get("addressPrefix") for i in items if isinstance(i, dict)])


LUSTRE_EXPANSION = (
    "https://learn.microsoft.com/cli/azure/amlfs/expansion (az amlfs expansion create: increase filesystem storage "
    "capacity); the expansion job's newStorageCapacityTiB must be greater than the current capacity "
    "(https://learn.microsoft.com/javascript/api/@azure/arm-storagecache/expansionjob, API 2026-01-01)"
)


def lustre_capacity_verdict(before: Any, after: Any, _context: Any = None) -> Verdict:
    """Managed Lustre grows in place, but only through an expansion job (a child resource,
    Microsoft.StorageCache/amlFilesystems/expansionJobs), never by a new storageCapacityTiB in the file system's
    own PUT: its storageCapacityTiB stays the size it was created with, and currentStorageCapacityTiB reports the
    expansions. hpclz does not create expansion jobs, so a larger size is refused with the way to grow it rather
    than replacing a file system Azure could have grown with its data. It cannot shrink: a smaller size is a new
    file system."""
    try:
        grows = float(after) > float(before)
    except (TypeError, ValueError):  # an expression or a missing value: the size cannot be compared offline
        grows = False
    if grows:
        return _v(
            Policy.NOT_ALLOWED,
            f"Managed Lustre grows in place only through an expansion job, which hpclz does not create "
            f"({before} -> {after} TiB); replacing it would lose its data",
            f"keep storage.lustre.capacity_tib at {before} and grow the file system with `az amlfs expansion create "
            f"--new-storage-capacity {after}`",
            LUSTRE_EXPANSION,
        )
    return _v(
        Policy.REPLACE_DATA,
        "Managed Lustre cannot shrink; a smaller size is a new file system",
        "archive the file system to its HSM blob container (or copy it) before applying",
        LUSTRE_EXPANSION,
    )


def address_space_verdict(before: Any, after: Any, context: Any = None) -> Verdict:
    """Adding ranges is an in-place update; a range can go only while no subnet uses it."""
    old, new = _networks(before), _networks(after)
    source = f"{DOCS}/virtual-network/manage-virtual-network#add-or-remove-an-address-range"
    if old and new and all(any(o.subnet_of(n) for n in new if o.version == n.version) for o in old):
        return _v(Policy.IN_PLACE, "address space grows; existing subnets keep their ranges", source=source)
    subnets = subnet_prefixes(context)
    outside = [s for s in subnets or [] if not any(s.version == n.version and s.subnet_of(n) for n in new)]
    if new and subnets is not None and subnets and not outside:
        return _v(Policy.IN_PLACE, "address space shrinks, but every subnet still fits in it", source=source)
    named = f" ({', '.join(str(s) for s in outside)} would fall outside)" if outside else ""
    return _v(
        Policy.NOT_ALLOWED,
        f"an address range cannot be removed or shrunk while subnets use it{named} (ARM: InUseSubnetCannotBeDeleted)",
        "add the new range first, move or recreate the subnets in it, then remove the old range",
        source,
    )


def _subnet_prefix(_before: Any, _after: Any, _context: Any = None) -> Verdict:
    # Not a replacement: the VNet holds every subnet, and ARM refuses to delete one while anything uses it
    # (InUseSubnetCannotBeDeleted), so deploy can neither update nor replace its way through.
    return _v(
        Policy.NOT_ALLOWED,
        "a subnet's prefix cannot change while NICs, private endpoints or delegated services use it "
        "(ARM: InUseSubnetCannotBeUpdated)",
        "add a subnet with the new range next to it, move the resources, then remove the old subnet",
        f"{DOCS}/virtual-network/virtual-network-manage-subnet#change-subnet-settings",
    )


# Storage replication moves that an ARM PUT performs (geo copies added or dropped); any move that
# adds or removes zone redundancy is a conversion Azure runs separately, not a property update.
_SAME_ZONE_FAMILY = ({"LRS", "GRS", "RAGRS"}, {"ZRS", "GZRS", "RAGZRS"})


def storage_sku_verdict(before: Any, after: Any, _context: Any = None) -> Verdict:
    source = f"{DOCS}/storage/common/redundancy-migration"
    old_tier, _, old_rep = str(before).partition("_")
    new_tier, _, new_rep = str(after).partition("_")
    if old_tier != new_tier:
        return _v(
            Policy.REPLACE_DATA,
            f"a storage account cannot move between {old_tier} and {new_tier} performance tiers",
            "create a new account and copy the data (AzCopy), then switch the landing zone to it",
            source,
        )
    if any(old_rep.upper() in family and new_rep.upper() in family for family in _SAME_ZONE_FAMILY):
        return _v(Policy.IN_PLACE, f"replication {old_rep} -> {new_rep} is changed in place", source=source)
    return _v(
        Policy.NOT_ALLOWED,
        f"replication {old_rep} -> {new_rep} adds or removes zone redundancy, which ARM does not update in place",
        "request a conversion (portal or `az storage account migration start`), wait for it, then plan again",
        source,
    )


def _storage_kind(before: Any, after: Any, _context: Any = None) -> Verdict:
    source = f"{DOCS}/storage/common/storage-account-upgrade"
    if str(after) == "StorageV2" and str(before) in ("Storage", "BlobStorage"):
        return _v(Policy.IN_PLACE, f"{before} upgrades to StorageV2 in place (one way)", source=source)
    return _v(
        Policy.REPLACE_DATA,
        f"storage account kind {before} -> {after} cannot change after creation",
        "create a new account and copy the data, then switch the landing zone to it",
        source,
    )


_BASTION_TIERS = ["Basic", "Standard", "Premium"]


def bastion_sku_verdict(before: Any, after: Any, _context: Any = None) -> Verdict:
    source = f"{DOCS}/bastion/upgrade-sku"
    tiers = {tier: rank for rank, tier in enumerate(_BASTION_TIERS)}
    if tiers.get(str(after), -1) > tiers.get(str(before), len(tiers)):
        return _v(Policy.IN_PLACE, f"Bastion upgrades {before} -> {after} in place", source=source)
    return _v(
        Policy.REPLACE,
        f"Bastion cannot be downgraded {before} -> {after}; it is deleted and recreated (sessions drop)",
        "tell users that open Bastion sessions will drop",
        source,
    )


def purge_protection_verdict(before: Any, after: Any, _context: Any = None) -> Verdict:
    if before is True and after is not True:
        return _v(
            Policy.NOT_ALLOWED,
            "Key Vault purge protection cannot be turned off once on",
            "keep purge_protection: true, or use a new vault (the old one stays until its retention ends)",
            f"{DOCS}/key-vault/general/soft-delete-overview#purge-protection",
        )
    return _v(Policy.IN_PLACE, "purge protection can be turned on in place")


MYSQL_DOCS = f"{DOCS}/mysql/flexible-server"


def mysql_storage_verdict(before: Any, after: Any, _context: Any = None) -> Verdict:
    """ "The storage size can only be increased. You cannot go back to a smaller storage size after the increase."
    (concepts-service-tiers-storage#scale-resources); autogrow may already have grown it past the config."""
    source = f"{MYSQL_DOCS}/concepts-service-tiers-storage#scale-resources"
    if isinstance(before, int) and isinstance(after, int) and after < before:
        return _v(
            Policy.NOT_ALLOWED,
            f"MySQL flexible server storage cannot shrink ({before} -> {after} GiB): storage can't be scaled down",
            "keep storage_gib at or above the server's current size (autogrow may have raised it)",
            source,
        )
    return _v(Policy.IN_PLACE, "storage grows online, without a restart", source=source)


def mysql_geo_backup_verdict(before: Any, after: Any, context: Any = None) -> Verdict:
    """Locally redundant backups move to geo-redundant after creation, but not a zone-redundant HA server's, and
    nothing documents the way back (concepts-backup-restore#backup-redundancy-options)."""
    source = f"{MYSQL_DOCS}/concepts-backup-restore#backup-redundancy-options"
    zone_redundant = "ZoneRedundant" in json_text(context)
    if after == "Enabled" and before == "Disabled" and not zone_redundant:
        return _v(Policy.IN_PLACE, "backups move from locally redundant to geo-redundant storage", source=source)
    return _v(
        Policy.NOT_ALLOWED,
        f"geo-redundant backup {before} -> {after} is set when the server is created for this server",
        "restore the server (point-in-time restore) with the new backup redundancy, then point the zone at it",
        source,
    )


def json_text(value: Any) -> str:
    return json.dumps(value, default=str)


def mysql_ha_verdict(before: Any, after: Any, _context: Any = None) -> Verdict:
    """Same-zone HA can be turned on after creation; zone-redundant HA "can only be configured during server
    creation" (concepts-high-availability#limitations)."""
    source = f"{MYSQL_DOCS}/concepts-high-availability#limitations"
    if "ZoneRedundant" in json_text(before) + json_text(after):
        return _v(
            Policy.NOT_ALLOWED,
            "zone-redundant high availability is configured only when the server is created",
            "restore the server (point-in-time restore) with the new setting, or keep the current one",
            source,
        )
    return _v(Policy.IN_PLACE, "same-zone high availability is turned on or off in place", source=source)


def mysql_version_verdict(before: Any, after: Any, _context: Any = None) -> Verdict:
    """A major version upgrade runs in place ("from MySQL 5.7 to 8.0 or 8.0 to 8.4 ... without moving data or
    changing application connection strings"), with downtime, and "Upgrading the major MySQL version is
    irreversible" (how-to-upgrade)."""
    source = f"{MYSQL_DOCS}/how-to-upgrade"
    order = ("5.7", "8.0.21", "8.4")
    if before in order and after in order and order.index(after) < order.index(before):
        return _v(
            Policy.NOT_ALLOWED,
            f"MySQL {before} cannot go back to {after}: a major version upgrade is irreversible",
            "keep the server's version, or restore a backup taken before the upgrade into a new server",
            source,
        )
    return _v(
        Policy.RESTART_NODES,
        f"the accounting server upgrades in place from MySQL {before} to {after}; it is down while it upgrades "
        "(how long depends on its tables) and cannot go back",
        "take an on-demand backup first and schedule it: sacct and new job records wait until the server is back",
        source,
    )


_MYSQL_RESTART = _v(
    Policy.RESTART_NODES,
    "the accounting server restarts for a new compute tier or size (60-120 s): slurmdbd reconnects, jobs keep running",
    "schedule it: sacct and new job records wait until the server is back",
    f"{MYSQL_DOCS}/concepts-service-tiers-storage#scale-resources",
)

# Defender for Cloud pricings are set on the subscription, not in a resource group: a plan turned on applies to every
# VM, storage account and Key Vault of the subscription ("plans ... are enabled at the subscription level",
# learn.microsoft.com/azure/defender-for-cloud/tutorial-enable-servers-plan). ARM has no delete for a
# subscription pricing (only resource-level ones, learn.microsoft.com/rest/api/defenderforcloud/pricings/delete):
# turning a plan off is a PUT of the Free tier, which would change the subscription for everyone else too, so
# hpclz never does it by itself.
SUBSCRIPTION_WIDE_TYPES = frozenset({"microsoft.security/pricings"})
DEFENDER_SOURCE = "learn.microsoft.com/azure/defender-for-cloud/tutorial-enable-servers-plan"
_WHOLE_SUBSCRIPTION = (
    "changes the WHOLE subscription: every VM, storage account and Key Vault in it, not only this landing zone's, "
    "gets the Defender plan and its charge"
)


_REPLACE_VM = "the VM is deleted and recreated with a new OS disk"
# The CycleCloud server's customData carries its one-time install and hpclz-server-programs, which installs the programs
# hpclz runs there (hpclz-cluster-sync, hpclz-cc-users) from the hpclz wheel in the locker, in place, whenever a newer
# hpclz deploys (templates/cloud-init/cyclecloud-server.yaml.j2, server_programs.py). So a config edit that reaches
# it renders a new one, and so does, once, a server an hpclz made before that loader, whose customData held the
# programs themselves. ARM cannot update it in place, so the only way to it is a new server: the server rebuild path
# (hpclz.plan.server_rebuild), with the consent a replace needs, rather than a refusal that would leave the zone
# unable to deploy again after an hpclz upgrade.
_CUSTOM_DATA = _v(
    Policy.REPLACE,
    "a VM's customData cannot be updated after the VM is created (ARM OSProfile.customData); the CycleCloud "
    "server's carries its one-time install and the loader of hpclz's server programs (hpclz-cluster-sync, "
    "hpclz-cc-users come from the hpclz wheel, in place), so a new one, from a config edit or, once, from a server "
    "an hpclz made before that loader (its customData held the programs), is a new server",
    "recreate the CycleCloud server in a maintenance window (its cluster definition comes back from userData): "
    + server_rebuild.replace_action(),
    'ARM OSProfile.customData reference: "This property cannot be updated after the VM is created."',
)
# The Open OnDemand VM (hpclz.render.portal) keeps nothing of its own: homes and the cluster's config are on NFS,
# its settings all in its boot script. A new boot script is a new VM, which loses nothing.
_PORTAL_CUSTOM_DATA = _v(
    Policy.REPLACE,
    "the portal's boot script (customData) cannot be updated in place: the portal VM is recreated with the new one; "
    "it holds no data (homes and /sched are on the shared NFS shares)",
    "deploy with --replace Microsoft.Compute/virtualMachines/<portal VM> and --allow-data-loss; users sign in again",
    'ARM OSProfile.customData reference: "This property cannot be updated after the VM is created."',
)


_USER_DATA = _v(
    Policy.IN_PLACE,
    "userData updates in place without a restart; on the CycleCloud server hpclz-cluster-sync re-imports "
    "the Slurm cluster from it within minutes (partitions whose size or image change still need draining)",
    "after the re-import, run `azslurm scale` on the Slurm scheduler so slurm.conf lists the new partitions",
    f"{DOCS}/virtual-machines/user-data",
)
# The portal's userData carries only its interactive-app proxy settings (hpclz.render.portal.proxy_user_data).
_PORTAL_USER_DATA = _v(
    Policy.IN_PLACE,
    "userData updates in place without a restart; on the portal hpclz-portal-proxy writes the new proxy settings "
    "(which partitions' nodes interactive apps reach) into ood_portal.yml within 5 minutes and restarts Apache",
    "none: open interactive-app sessions on removed partitions end with their jobs",
    f"{DOCS}/virtual-machines/user-data",
)


def _on_portal(body: Any) -> bool:
    """The portal by its computer name (`<zone>-ood`, hpclz.render.portal), which both the rendered body and
    what-if's after-body carry (the resource name is not in the former)."""
    from hpclz.render.portal import LABEL

    os_profile = ((body or {}).get("properties") or {}).get("osProfile") if isinstance(body, dict) else None
    name = os_profile.get("computerName") if isinstance(os_profile, dict) else None
    return str(name).endswith(f"-{LABEL}")


def _user_data_verdict(body: Any) -> Verdict:
    return _PORTAL_USER_DATA if _on_portal(body) else _USER_DATA


def _custom_data_verdict(body: Any) -> Verdict:
    return _PORTAL_CUSTOM_DATA if _on_portal(body) else _CUSTOM_DATA


RESOURCE_RULES: dict[str, list[PropertyRule]] = {
    "microsoft.network/virtualnetworks": [
        PropertyRule("properties.addressSpace.addressPrefixes", address_space_verdict),
        PropertyRule("properties.subnets[*].properties.addressPrefix", _subnet_prefix),
        PropertyRule("properties.subnets[*].properties.addressPrefixes", _subnet_prefix),
    ],
    "microsoft.network/virtualnetworks/subnets": [
        PropertyRule("properties.addressPrefix", _subnet_prefix),
        PropertyRule("properties.addressPrefixes", _subnet_prefix),
        PropertyRule(
            "properties.delegations*",
            _v(
                Policy.NOT_ALLOWED,
                "a subnet's delegation cannot change while resources of the delegated service use it",
                "remove the resources in the subnet (e.g. NetApp volumes, Lustre) or use a new subnet",
                f"{DOCS}/virtual-network/manage-subnet-delegation",
            ),
        ),
    ],
    "microsoft.storagecache/amlfilesystems": [
        PropertyRule(
            "sku.name",
            _v(
                Policy.REPLACE_DATA,
                "Managed Lustre's throughput SKU is fixed at creation",
                "archive the file system to its HSM blob container (or copy it) before applying",
                f"{DOCS}/azure-managed-lustre/create-file-system-portal (capacity and throughput cannot change after creation)",
            ),
        ),
        PropertyRule("properties.storageCapacityTiB", lambda old, new, _ctx: lustre_capacity_verdict(old, new)),
        PropertyRule(
            "properties.filesystemSubnet",
            _v(Policy.REPLACE_DATA, "Managed Lustre cannot move to another subnet", "copy the data off first"),
        ),
        PropertyRule(
            "properties.hsm*",
            _v(
                Policy.REPLACE_DATA,
                "blob integration (HSM) is set only when a Managed Lustre file system is created",
                "copy the data off first",
                f"{DOCS}/azure-managed-lustre/blob-integration",
            ),
        ),
        PropertyRule("properties.maintenanceWindow*", _v(Policy.IN_PLACE, "the maintenance window updates in place")),
        PropertyRule(
            "zones*",
            _v(
                Policy.REPLACE_DATA,
                "Managed Lustre is placed in its zone when it is created; hpclz recreates it in the new zone",
                "archive the file system to its HSM blob container (or copy it) before applying",
                f"{DOCS}/azure-managed-lustre/create-file-system-portal (region and availability zone on the Basics tab)",
            ),
        ),
    ],
    "microsoft.netapp/netappaccounts/capacitypools": [
        PropertyRule("properties.size", _v(Policy.IN_PLACE, "capacity pools resize in place")),
        PropertyRule(
            "properties.serviceLevel",
            _v(
                Policy.NOT_ALLOWED,
                "a capacity pool's service level is fixed at creation",
                "create a pool at the new level and move the volumes to it (volume 'change pool', no downtime)",
                f"{DOCS}/azure-netapp-files/dynamic-change-volume-service-level",
            ),
        ),
    ],
    "microsoft.netapp/netappaccounts/capacitypools/volumes": [
        PropertyRule("properties.usageThreshold", _v(Policy.IN_PLACE, "volume quota resizes in place")),
        # Azure NetApp Files converts an NFS volume between NFSv3 and NFSv4.1 in place: the option "doesn't require
        # creating new volumes or performing data copies. The conversion operations preserve the data and update the
        # volume export policies as part of the operation" (MicrosoftDocs/azure-docs articles/azure-netapp-files/
        # whats-new.md, December 2021; the procedure: convert-nfsv3-nfsv41, which has clients unmount it first).
        PropertyRule("properties.protocolTypes*", NFS_CONVERSION),
        PropertyRule("properties.exportPolicy.rules*.nfsv3", NFS_CONVERSION),
        PropertyRule("properties.exportPolicy.rules*.nfsv41", NFS_CONVERSION),
        PropertyRule(
            "properties.creationToken",
            _v(Policy.REPLACE_DATA, "a volume's file path (creationToken) is fixed at creation", "copy the data off"),
        ),
        PropertyRule(
            "properties.subnetId",
            _v(Policy.REPLACE_DATA, "a volume cannot move to another subnet", "copy the data off first"),
        ),
        PropertyRule(
            "properties.dataProtection.snapshot*",
            _v(
                Policy.IN_PLACE,
                "a volume's snapshot policy is applied or changed by editing the volume; its snapshots stay",
                source=f"{DOCS}/azure-netapp-files/snapshots-manage-policy#apply-a-snapshot-policy-to-a-volume",
            ),
        ),
    ],
    "microsoft.netapp/netappaccounts/snapshotpolicies": [
        PropertyRule(
            "properties*",
            _v(
                Policy.IN_PLACE,
                "a snapshot policy's state, schedules and counts change in place; policies made since March 2022 "
                "apply the new counts to the snapshots they already took",
                source=f"{DOCS}/azure-netapp-files/snapshots-manage-policy#modify-a-snapshot-policy",
            ),
        ),
    ],
    "microsoft.storage/storageaccounts/fileservices": [
        PropertyRule(
            "properties.shareDeleteRetentionPolicy*",
            _v(
                Policy.IN_PLACE,
                "share soft delete is turned on, off or re-timed on an existing account, for new and existing shares",
                source=f"{DOCS}/storage/files/storage-files-prevent-file-share-deletion",
            ),
        ),
    ],
    "microsoft.storage/storageaccounts": [
        PropertyRule("sku.name", storage_sku_verdict),
        PropertyRule("kind", _storage_kind),
        PropertyRule(
            "properties.isHnsEnabled",
            _v(
                Policy.REPLACE_DATA,
                "hierarchical namespace is set at creation (only a one-way upgrade exists outside ARM)",
                "create a new account and copy the data",
                f"{DOCS}/storage/blobs/upgrade-to-data-lake-storage-gen2",
            ),
        ),
    ],
    "microsoft.storage/storageaccounts/blobservices/containers": [
        PropertyRule(
            "properties.immutableStorageWithVersioning*",
            _v(
                Policy.NOT_ALLOWED,
                "version-level immutability is set when a container is created; ARM cannot add or remove it later",
                "add a container with the new setting and copy the blobs to it (AzCopy)",
                "Azure REST spec, Microsoft.Storage 2023-05-01 ContainerProperties.immutableStorageWithVersioning: "
                "'can only be set to true at the container creation time'",
            ),
        ),
    ],
    "microsoft.keyvault/vaults": [
        PropertyRule("properties.enablePurgeProtection", purge_protection_verdict),
        PropertyRule(
            "properties.softDeleteRetentionInDays",
            _v(
                Policy.NOT_ALLOWED,
                "Key Vault soft-delete retention cannot change after creation",
                "keep the current retention, or use a new vault",
                f"{DOCS}/key-vault/general/soft-delete-overview",
            ),
        ),
    ],
    "microsoft.insights/diagnosticsettings": [
        PropertyRule(
            "properties.workspaceId",
            _v(
                Policy.IN_PLACE,
                "the setting updates in place; logs already sent stay in the old workspace",
                "",
                f"{DOCS}/azure-monitor/essentials/diagnostic-settings",
            ),
        ),
    ],
    "microsoft.dbformysql/flexibleservers": [
        PropertyRule("sku*", _MYSQL_RESTART),
        PropertyRule("properties.storage.storageSizeGB", mysql_storage_verdict),
        PropertyRule(
            "properties.backup.backupRetentionDays", _v(Policy.IN_PLACE, "retention changes online (1-35 days)")
        ),
        PropertyRule("properties.backup.geoRedundantBackup", mysql_geo_backup_verdict),
        PropertyRule(
            "properties.network*",
            _v(
                Policy.NOT_ALLOWED,
                "a VNet-integrated server cannot move to another subnet, and its private DNS zone cannot change "
                "after deployment",
                "restore the server into the new subnet (point-in-time restore) and point the zone at it",
                f"{MYSQL_DOCS}/concepts-networking-vnet#unsupported-virtual-network-scenarios",
            ),
        ),
        PropertyRule("properties.highAvailability*", mysql_ha_verdict),
        PropertyRule("properties.version", mysql_version_verdict),
        PropertyRule(
            "properties.administratorLogin",
            _v(
                Policy.NOT_ALLOWED,
                "the administrator login is set only when the server is created (ARM ServerProperties.administratorLogin)",
                "keep admin_user",
                "Microsoft.DBforMySQL 2025-12-01-preview schema: 'Can only be specified when the server is being created'",
            ),
        ),
        PropertyRule(
            "properties.availabilityZone",
            _v(Policy.REPLACE_DATA, "the server's availability zone is fixed at creation", "dump and restore the data"),
        ),
    ],
    # Managed Grafana keeps its dashboards and users inside the instance: a replacement loses them.
    "microsoft.dashboard/grafana": [
        PropertyRule(
            "properties.zoneRedundancy",
            _v(
                Policy.REPLACE_DATA,
                "zone redundancy is chosen when an Azure Managed Grafana workspace is created",
                "export the dashboards and user settings first; hpclz's own dashboards are re-imported from render",
                f"{DOCS}/managed-grafana/how-to-enable-zone-redundancy",
            ),
        ),
    ],
    "microsoft.security/pricings": [
        PropertyRule(
            "properties*",
            _v(Policy.IN_PLACE, _WHOLE_SUBSCRIPTION, "agree it with the subscription's owner", DEFENDER_SOURCE),
        ),
    ],
    "microsoft.network/bastionhosts": [PropertyRule("sku.name", bastion_sku_verdict)],
    "microsoft.network/publicipaddresses": [
        PropertyRule("sku*", _v(Policy.REPLACE, "a public IP's SKU is fixed at creation; the address changes")),
        PropertyRule(
            "properties.publicIPAllocationMethod",
            _v(Policy.REPLACE, "Standard public IPs are static; the address is released and a new one made"),
        ),
    ],
    "microsoft.compute/virtualmachines": [
        PropertyRule(
            "properties.hardwareProfile.vmSize",
            _v(
                Policy.RESTART_NODES,
                "resizing a VM restarts it",
                "schedule the restart: Slurm is down while the scheduler VM reboots",
                f"{DOCS}/virtual-machines/sizes/resize-vm",
            ),
        ),
        PropertyRule("properties.storageProfile.imageReference*", _v(Policy.REPLACE, _REPLACE_VM)),
        PropertyRule(
            "zones*",
            _v(
                Policy.REPLACE,
                "a VM's availability zone is set when it is created; moving it to another zone means a new VM",
                "recreate the CycleCloud server in a maintenance window (its cluster definition comes back from "
                "userData): " + server_rebuild.replace_action(),
                f"{DOCS}/virtual-machines/move-virtual-machines-regional-zonal-portal (a zonal move creates a new VM)",
            ),
        ),
        PropertyRule("properties.osProfile.customData", lambda _b, _a, body: _custom_data_verdict(body)),
        # Before osProfile*: the patch orchestration mode is changed on an existing VM by updating its model ("To
        # modify an existing VM, use az vm update ... --set ...patchSettings.patchMode=AutomaticByPlatform"; "To
        # disable automatic VM guest patching on a Linux VM, change the patch mode to ImageDefault"), no restart
        # named; the platform then "makes periodic patching configuration calls" when "patch mode" changes.
        PropertyRule(
            "properties.osProfile.linuxConfiguration.patchSettings*",
            _v(
                Policy.IN_PLACE,
                "the VM's patch orchestration mode is updated in place (no restart is documented); Azure applies it at its "
                "next patching configuration call",
                "",
                f"{DOCS}/virtual-machines/automatic-vm-guest-patching",
            ),
        ),
        PropertyRule("properties.userData", lambda _b, _a, body: _user_data_verdict(body)),
        PropertyRule(
            "properties.osProfile*",
            _v(
                Policy.NOT_ALLOWED,
                "OS profile settings (admin user, SSH keys) cannot change after creation (ARM: PropertyChangeNotAllowed)",
                "update SSH keys with the VMAccess extension, or recreate the VM",
                f"{DOCS}/virtual-machines/extensions/vmaccess-linux",
            ),
        ),
        PropertyRule("zones*", _v(Policy.REPLACE, "a VM cannot move between availability zones")),
    ],
    "microsoft.compute/virtualmachinescalesets": [
        PropertyRule(
            "sku.name",
            _v(
                Policy.DRAIN_PARTITION,
                "every node of the scale set is reimaged at the new size",
                "drain the partition (scontrol update partition=<name> state=drain) and wait for jobs to finish",
                f"{DOCS}/virtual-machine-scale-sets/virtual-machine-scale-sets-upgrade-scale-set",
            ),
        ),
        PropertyRule(
            "properties.virtualMachineProfile.storageProfile.imageReference*",
            _v(Policy.DRAIN_PARTITION, "nodes pick up a new image only when reimaged", "drain the partition first"),
        ),
    ],
}

_GENERIC: list[PropertyRule] = [
    PropertyRule("tags*", _v(Policy.IN_PLACE, "tags update in place")),
    PropertyRule("location", _v(Policy.REPLACE, "a resource cannot move region through a deployment")),
    PropertyRule("zones*", _v(Policy.REPLACE, "a resource's availability zones are fixed at creation")),
    PropertyRule("properties.provisioningState", _v(Policy.IN_PLACE, "set by Azure")),
]

_DEFAULT = _v(Policy.IN_PLACE, "no known replacement trigger: ARM updates it with an idempotent PUT")
_SELECTOR = re.compile(r"\[[^\]]*\]")


def wildcard(path: str) -> str:
    """`properties.subnets[snet-x].properties.addressPrefix` -> `properties.subnets[*].properties.addressPrefix`."""
    return _SELECTOR.sub("[*]", path)


def path_matches(shape: str, pattern: str) -> bool:
    """fnmatch, except that `[*]` means "any list item" rather than a one-character set."""
    return fnmatchcase(shape.replace("[*]", "<item>"), pattern.replace("[*]", "<item>"))


def property_verdict(
    resource_type: str, path: str, before: Any, after: Any, data_bearing: bool, body: Any = None
) -> Verdict:
    """`body`: the resource's new body, for rules that look beyond the property (subnets in a VNet)."""
    shape = wildcard(path)
    rules = [*RESOURCE_RULES.get(resource_type.lower(), []), *_GENERIC]
    verdict = next((r.evaluate(before, after, body) for r in rules if path_matches(shape, r.path)), _DEFAULT)
    if verdict.policy is Policy.REPLACE and data_bearing:
        verdict = verdict.model_copy(
            update={"policy": Policy.REPLACE_DATA, "action_needed": verdict.action_needed or "copy the data off first"}
        )
    return verdict


def is_data_bearing(resource_type: str) -> bool:
    return resource_type.lower() in DATA_BEARING_TYPES


def is_subscription_wide(resource_type: str) -> bool:
    return resource_type.lower() in SUBSCRIPTION_WIDE_TYPES


def delete_verdict(resource_type: str, data_bearing: bool) -> Verdict:
    if is_subscription_wide(resource_type):
        return _v(
            Policy.IN_PLACE,
            "hpclz stops managing this Defender plan and leaves it on for the subscription",
            "to turn it off, set the Free tier yourself (az security pricing create -n <plan> --tier free): "
            "that too changes the whole subscription",
            DEFENDER_SOURCE,
        )
    if data_bearing:
        return _v(
            Policy.REPLACE_DATA,
            "the resource and the data on it are destroyed",
            "copy the data off first (AzCopy, or an HSM archive for Lustre)",
        )
    return _v(Policy.REPLACE, "the resource is deleted")


def create_verdict(resource_type: str = "") -> Verdict:
    if is_subscription_wide(resource_type):
        return _v(
            Policy.IN_PLACE,
            _WHOLE_SUBSCRIPTION,
            "agree it with the subscription's owner; destroy leaves it on",
            DEFENDER_SOURCE,
        )
    return _v(Policy.IN_PLACE, "a new resource; nothing existing is touched")
