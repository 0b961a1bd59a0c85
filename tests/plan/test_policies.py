"""The per-type table: which ARM property changes are in place, drain, restart, replace or are refused."""

from __future__ import annotations

from typing import Any

import pytest

from hpclz.plan.changeset import Policy
from hpclz.plan.policies import property_verdict

MYSQL = "Microsoft.DBforMySQL/flexibleServers"
VNET_BODY = {"properties": {"subnets": [{"name": "a", "properties": {"addressPrefix": "10.0.1.0/24"}}]}}

CASES: list[tuple[str, str, Any, Any, bool, Policy]] = [
    ("Microsoft.Storage/storageAccounts", "sku.name", "Standard_LRS", "Standard_RAGRS", True, Policy.IN_PLACE),
    ("Microsoft.Storage/storageAccounts", "sku.name", "Standard_ZRS", "Standard_GZRS", True, Policy.IN_PLACE),
    ("Microsoft.Storage/storageAccounts", "sku.name", "Standard_LRS", "Standard_ZRS", True, Policy.NOT_ALLOWED),
    ("Microsoft.Storage/storageAccounts", "sku.name", "Standard_LRS", "Premium_LRS", True, Policy.REPLACE_DATA),
    ("Microsoft.Storage/storageAccounts", "kind", "Storage", "StorageV2", True, Policy.IN_PLACE),
    ("Microsoft.Storage/storageAccounts", "kind", "StorageV2", "BlockBlobStorage", True, Policy.REPLACE_DATA),
    (
        "Microsoft.Storage/storageAccounts/blobServices/containers",
        "properties.immutableStorageWithVersioning.enabled",
        None,
        True,
        True,
        Policy.NOT_ALLOWED,
    ),
    # Azure Database for MySQL flexible server (learn.microsoft.com/azure/mysql/flexible-server/
    # concepts-service-tiers-storage#scale-resources, concepts-backup-restore, concepts-high-availability#limitations).
    (MYSQL, "properties.storage.storageSizeGB", 32, 64, True, Policy.IN_PLACE),
    (MYSQL, "properties.storage.storageSizeGB", 64, 32, True, Policy.NOT_ALLOWED),
    (MYSQL, "sku.name", "Standard_D2ads_v5", "Standard_D4ads_v5", True, Policy.RESTART_NODES),
    (MYSQL, "properties.backup.backupRetentionDays", 35, 7, True, Policy.IN_PLACE),
    (MYSQL, "properties.backup.geoRedundantBackup", "Disabled", "Enabled", True, Policy.IN_PLACE),
    (MYSQL, "properties.backup.geoRedundantBackup", "Enabled", "Disabled", True, Policy.NOT_ALLOWED),
    (MYSQL, "properties.highAvailability.mode", "Disabled", "SameZone", True, Policy.IN_PLACE),
    (MYSQL, "properties.highAvailability.mode", "Disabled", "ZoneRedundant", True, Policy.NOT_ALLOWED),
    (MYSQL, "properties.network.delegatedSubnetResourceId", "a", "b", True, Policy.NOT_ALLOWED),
    (MYSQL, "properties.administratorLogin", "slurmdbd", "admin", True, Policy.NOT_ALLOWED),
    # learn.microsoft.com/azure/mysql/flexible-server/how-to-upgrade: 8.0 -> 8.4 in place, never back.
    (MYSQL, "properties.version", "8.0.21", "8.4", True, Policy.RESTART_NODES),
    (MYSQL, "properties.version", "8.4", "8.0.21", True, Policy.NOT_ALLOWED),
    ("Microsoft.Dashboard/grafana", "properties.zoneRedundancy", "Disabled", "Enabled", False, Policy.REPLACE_DATA),
    ("Microsoft.Dashboard/grafana", "properties.grafanaMajorVersion", "11", "12", False, Policy.IN_PLACE),
    ("Microsoft.Network/bastionHosts", "sku.name", "Basic", "Standard", False, Policy.IN_PLACE),
    ("Microsoft.Network/bastionHosts", "sku.name", "Premium", "Standard", False, Policy.REPLACE),
    ("Microsoft.KeyVault/vaults", "properties.enablePurgeProtection", True, False, False, Policy.NOT_ALLOWED),
    ("Microsoft.KeyVault/vaults", "properties.enablePurgeProtection", None, True, False, Policy.IN_PLACE),
    ("Microsoft.NetApp/netAppAccounts/capacityPools/volumes", "properties.usageThreshold", 1, 2, True, Policy.IN_PLACE),
    (
        "Microsoft.NetApp/netAppAccounts/capacityPools/volumes",
        "properties.protocolTypes",
        ["NFSv3"],
        ["NFSv4.1"],
        True,
        Policy.RESTART_NODES,  # converted in place once unmounted (hpclz.plan.policies NFS_CONVERSION)
    ),
    (
        "Microsoft.NetApp/netAppAccounts/capacityPools/volumes",
        "properties.exportPolicy.rules[0].nfsv41",
        False,
        True,
        True,
        Policy.RESTART_NODES,
    ),
    (
        "Microsoft.NetApp/netAppAccounts/capacityPools",
        "properties.serviceLevel",
        "Premium",
        "Ultra",
        False,
        Policy.NOT_ALLOWED,
    ),
    ("Microsoft.Compute/virtualMachines", "properties.hardwareProfile.vmSize", "a", "b", False, Policy.RESTART_NODES),
    ("Microsoft.Compute/virtualMachines", "properties.osProfile.customData", "a", "b", False, Policy.REPLACE),
    ("Microsoft.Compute/virtualMachines", "properties.userData", "a", "b", False, Policy.IN_PLACE),
    # The CycleCloud server leaving platform patching: a model update, not a new VM (automatic-vm-guest-patching).
    (
        "Microsoft.Compute/virtualMachines",
        "properties.osProfile.linuxConfiguration.patchSettings.patchMode",
        "AutomaticByPlatform",
        "ImageDefault",
        False,
        Policy.IN_PLACE,
    ),
    ("Microsoft.Compute/virtualMachines", "properties.osProfile.adminUsername", "a", "b", False, Policy.NOT_ALLOWED),
    ("Microsoft.Compute/virtualMachineScaleSets", "sku.name", "a", "b", False, Policy.DRAIN_PARTITION),
    (
        "Microsoft.Network/virtualNetworks",
        "properties.subnets[a].properties.addressPrefix",
        "x",
        "y",
        False,
        Policy.NOT_ALLOWED,
    ),
    ("Microsoft.Network/virtualNetworks", "location", "eastus", "westus", False, Policy.REPLACE),
    ("Microsoft.StorageCache/amlFilesystems", "location", "eastus", "westus", True, Policy.REPLACE_DATA),
    ("Microsoft.Network/natGateways", "properties.idleTimeoutInMinutes", 4, 10, False, Policy.IN_PLACE),
]

# backup.shared's resources: each change is in place, and the verdict names the page that says so.
SHARED_BACKUP_SOURCES = [
    (
        "Microsoft.NetApp/netAppAccounts/snapshotPolicies",
        "properties.dailySchedule.snapshotsToKeep",
        "snapshots-manage-policy#modify-a-snapshot-policy",
    ),
    (
        "Microsoft.NetApp/netAppAccounts/capacityPools/volumes",
        "properties.dataProtection.snapshot.snapshotPolicyId",
        "snapshots-manage-policy#apply-a-snapshot-policy-to-a-volume",
    ),
    (
        "Microsoft.Storage/storageAccounts/fileServices",
        "properties.shareDeleteRetentionPolicy.days",
        "storage-files-prevent-file-share-deletion",
    ),
]


@pytest.mark.parametrize(("rtype", "path", "page"), SHARED_BACKUP_SOURCES)
def test_shared_backup_changes_are_in_place_with_their_source(rtype: str, path: str, page: str) -> None:
    verdict = property_verdict(rtype, path, 7, 14, True)
    assert verdict.policy is Policy.IN_PLACE and verdict.source.endswith(page)


@pytest.mark.parametrize(("rtype", "path", "before", "after", "data", "expected"), CASES)
def test_property_verdict(rtype: str, path: str, before: Any, after: Any, data: bool, expected: Policy) -> None:
    verdict = property_verdict(rtype, path, before, after, data)
    assert verdict.policy is expected
    assert verdict.reason
    if expected in (Policy.NOT_ALLOWED, Policy.REPLACE_DATA):
        assert verdict.action_needed  # a refused or destructive change always says what to do instead


def test_address_space_shrink_is_allowed_only_while_every_subnet_fits() -> None:
    vnet = "Microsoft.Network/virtualNetworks"
    path = "properties.addressSpace.addressPrefixes"
    fits = property_verdict(vnet, path, ["10.0.0.0/16"], ["10.0.0.0/20"], False, VNET_BODY)
    assert fits.policy is Policy.IN_PLACE
    outside = property_verdict(vnet, path, ["10.0.0.0/16"], ["10.0.8.0/22"], False, VNET_BODY)
    assert outside.policy is Policy.NOT_ALLOWED and "10.0.1.0/24" in outside.reason


def test_geo_backup_cannot_be_added_to_a_zone_redundant_server() -> None:
    """ "for a Zone-redundant High Availability server geo-redundancy can only be enabled/disabled at server create
    time" (learn.microsoft.com/azure/mysql/flexible-server/concepts-backup-restore)."""
    body = {"properties": {"highAvailability": {"mode": "ZoneRedundant"}}}
    path = "properties.backup.geoRedundantBackup"
    verdict = property_verdict(MYSQL, path, "Disabled", "Enabled", True, body)
    assert verdict.policy is Policy.NOT_ALLOWED and "concepts-backup-restore" in verdict.source
