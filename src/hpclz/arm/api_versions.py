"""The API version pinned for each resource type hpclz renders (hpclz/armschemas/README.md).

Pinning keeps rendered templates, the schema gate and the ARM stand-in on one version per type; a test
checks this table against the schemas' resourceIndex.json. Extend both together.
"""

from __future__ import annotations

# API version -> the types pinned at it; scripts/regen-armschemas reads this table to rebuild the subset.
PINNED_BY_VERSION: dict[str, tuple[str, ...]] = {
    "2024-05-01": (
        "Microsoft.Network/virtualNetworks",
        "Microsoft.Network/virtualNetworks/subnets",
        "Microsoft.Network/virtualNetworks/virtualNetworkPeerings",
        "Microsoft.Network/networkSecurityGroups",
        "Microsoft.Network/networkSecurityGroups/securityRules",
        "Microsoft.Network/bastionHosts",
        "Microsoft.Network/natGateways",
        "Microsoft.Network/publicIPAddresses",
        "Microsoft.Network/privateEndpoints",
        "Microsoft.Network/privateEndpoints/privateDnsZoneGroups",
        "Microsoft.Network/networkInterfaces",
        "Microsoft.Network/routeTables",
        "Microsoft.Network/applicationSecurityGroups",
        "Microsoft.Network/networkWatchers",
        "Microsoft.Network/networkWatchers/flowLogs",
        # The hub's egress rule collection group hpclz renders for the hub team (hpclz.render.hub_egress).
        "Microsoft.Network/firewallPolicies/ruleCollectionGroups",
    ),
    "2024-06-01": (
        "Microsoft.Network/privateDnsZones",
        "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
        "Microsoft.Network/privateDnsZones/A",
    ),
    "2024-07-01": (
        "Microsoft.Compute/virtualMachines",
        "Microsoft.Compute/virtualMachines/extensions",
        "Microsoft.Compute/virtualMachineScaleSets",
        "Microsoft.Compute/virtualMachineScaleSets/extensions",
        "Microsoft.Compute/proximityPlacementGroups",
        "Microsoft.Compute/availabilitySets",
        "Microsoft.Compute/sshPublicKeys",
        "Microsoft.NetApp/netAppAccounts",
        "Microsoft.NetApp/netAppAccounts/capacityPools",
        "Microsoft.NetApp/netAppAccounts/capacityPools/volumes",
        "Microsoft.NetApp/netAppAccounts/snapshotPolicies",
        "Microsoft.Batch/batchAccounts",
        "Microsoft.Batch/batchAccounts/pools",
    ),
    "2023-05-01": (
        "Microsoft.Storage/storageAccounts",
        "Microsoft.Storage/storageAccounts/blobServices",
        "Microsoft.Storage/storageAccounts/blobServices/containers",
        "Microsoft.Storage/storageAccounts/fileServices",
        "Microsoft.Storage/storageAccounts/fileServices/shares",
        "Microsoft.Storage/storageAccounts/managementPolicies",
    ),
    "2024-03-01": (
        "Microsoft.StorageCache/amlFilesystems",
        "Microsoft.Resources/deployments",
        "Microsoft.Resources/resourceGroups",
    ),
    "2023-07-01": ("Microsoft.KeyVault/vaults", "Microsoft.KeyVault/vaults/secrets"),
    "2023-01-31": ("Microsoft.ManagedIdentity/userAssignedIdentities",),
    "2022-04-01": ("Microsoft.Authorization/roleAssignments",),
    # Latest GA versions at the schema snapshot (a1454431, 2026-08-16); diagnostic settings have no GA
    # version newer than 2017, so the current one upstream is 2021-05-01-preview.
    "2025-03-01": ("Microsoft.Authorization/policyAssignments",),
    "2021-05-01-preview": ("Microsoft.Insights/diagnosticSettings",),
    "2023-09-01": (
        "Microsoft.OperationalInsights/workspaces",
        "Microsoft.OperationalInsights/workspaces/savedSearches",
    ),
    "2023-01-01": ("Microsoft.Insights/actionGroups",),
    "2024-03-11": (
        "Microsoft.Insights/dataCollectionRules",
        "Microsoft.Insights/dataCollectionRuleAssociations",
        "Microsoft.Insights/dataCollectionEndpoints",
    ),
    # Managed Prometheus and Grafana at the versions CCWS's monitoring deploys
    # (Azure/cyclecloud-monitoring@3da922e:infra/managedMonitoring.bicep); Prometheus rule groups at their GA version.
    "2023-04-03": ("Microsoft.Monitor/accounts",),
    "2024-10-01": ("Microsoft.Dashboard/grafana",),
    "2023-03-01": ("Microsoft.AlertsManagement/prometheusRuleGroups",),
    "2018-03-01": ("Microsoft.Insights/metricAlerts",),
    # Defender for Cloud plans (learn.microsoft.com/azure/templates/microsoft.security/2024-01-01/pricings):
    # the version that carries subPlan, enforce and extensions.
    "2024-01-01": ("Microsoft.Security/pricings",),
    # Azure Backup for the CycleCloud server (backup: ...): the Recovery Services vault, its VM policy and the
    # protected item, at the GA version whose vault body carries securitySettings.softDeleteSettings.
    "2024-04-01": (
        "Microsoft.RecoveryServices/vaults",
        "Microsoft.RecoveryServices/vaults/backupPolicies",
        "Microsoft.RecoveryServices/vaults/backupFabrics/protectionContainers/protectedItems",
    ),
    # Azure Database for MySQL flexible servers (Slurm accounting, compute.accounting mode new): the newest upstream
    # version, and with 2025-06-01-preview the only ones whose ServerProperties.version enum holds "8.4" (every GA
    # version up to 2024-12-30 allows only "5.7" and "8.0.21": azure-resource-manager-schemas@a1454431
    # schemas/<version>/Microsoft.DBforMySQL.FlexibleServers.json, definitions.ServerProperties.properties.version).
    # MySQL 8.0 left Azure's standard support on 2026-05-31 and runs in paid extended support from 2026-06-01
    # (learn.microsoft.com/azure/mysql/concepts-version-policy), so a new server must be 8.4 (HPCLZ-TPL-054).
    # It keeps what the server renders: VNet integration, backup retention and geo-redundancy, high availability.
    "2025-12-01-preview": (
        "Microsoft.DBforMySQL/flexibleServers",
        "Microsoft.DBforMySQL/flexibleServers/configurations",
    ),
    "2023-04-01": (
        "Microsoft.Maintenance/maintenanceConfigurations",
        "Microsoft.Maintenance/configurationAssignments",
    ),
}

PINNED_API_VERSIONS: dict[str, str] = {
    t.lower(): version for version, types in PINNED_BY_VERSION.items() for t in types
}


def pinned_version(resource_type: str) -> str | None:
    return PINNED_API_VERSIONS.get(resource_type.lower())
