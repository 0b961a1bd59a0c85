"""Every ARM resource kind hpclz deploys, and how it reaches the estimate.

A kind is priced by a config-derived line of `hpclz.cost.estimate` (the line lists it in `covers`), has no
charge of its own (NO_CHARGE, with where that is stated), or is billed on a basis hpclz has no meter for yet
(UNPRICED, with the basis). `hpclz.cost.estimate` turns what a rendered plan holds into lines, so no kind is silently
left out of the estimate: a kind in none of the tables gets a line that says hpclz knows nothing of its price.
"""

from __future__ import annotations

_VNET = "https://azure.microsoft.com/pricing/details/virtual-network/"
_MONITOR = "https://azure.microsoft.com/pricing/details/monitor/"
_STORAGE = "https://azure.microsoft.com/pricing/details/storage/"

# Kinds with no charge of their own: what is said about them and where.
NO_CHARGE: dict[str, str] = {
    "Microsoft.Resources/resourceGroups": "a container for resources; the resources in it are billed",
    "Microsoft.Authorization/roleAssignments": "Azure RBAC has no charge (learn.microsoft.com/azure/role-based-access-control/overview)",
    "Microsoft.Authorization/policyAssignments": "Azure Policy on Azure resources has no charge (azure.microsoft.com/pricing/details/azure-policy/)",
    "Microsoft.ManagedIdentity/userAssignedIdentities": "managed identities have no extra cost (learn.microsoft.com/entra/identity/managed-identities-azure-resources/overview)",
    "Microsoft.Network/virtualNetworks": f"a virtual network has no charge; peering traffic is billed per GB ({_VNET})",
    "Microsoft.Network/networkSecurityGroups": f"network security groups have no charge ({_VNET})",
    "Microsoft.Network/routeTables": f"route tables have no charge ({_VNET})",
    "Microsoft.Network/networkInterfaces": f"a NIC is billed with its VM, not on its own ({_VNET})",
    "Microsoft.Compute/virtualMachines/extensions": "an extension runs on its VM; the VM is billed",
    "Microsoft.Insights/diagnosticSettings": f"the setting has no charge; what it sends is billed where it lands ({_MONITOR})",
    "Microsoft.Insights/dataCollectionRules": f"a rule has no charge; the data it collects is billed by Log Analytics ({_MONITOR})",
    "Microsoft.Insights/dataCollectionRuleAssociations": f"an association has no charge ({_MONITOR})",
    "Microsoft.Insights/dataCollectionEndpoints": f"an endpoint has no charge; ingestion is billed ({_MONITOR})",
    "Microsoft.OperationalInsights/workspaces/savedSearches": "a saved query in the workspace; the workspace is billed",
    "Microsoft.Maintenance/maintenanceConfigurations": "maintenance configurations have no charge (learn.microsoft.com/azure/virtual-machines/maintenance-configurations)",
    "Microsoft.Maintenance/configurationAssignments": "maintenance configurations have no charge (learn.microsoft.com/azure/virtual-machines/maintenance-configurations)",
    "Microsoft.Storage/storageAccounts/blobServices": f"settings of its storage account, which is billed ({_STORAGE})",
    "Microsoft.Storage/storageAccounts/blobServices/containers": f"billed with its storage account's capacity ({_STORAGE})",
    "Microsoft.Storage/storageAccounts/fileServices": f"settings of its storage account, which is billed ({_STORAGE})",
    "Microsoft.Storage/storageAccounts/managementPolicies": f"lifecycle rules have no charge; the moves they make are billed ({_STORAGE})",
    "Microsoft.DBforMySQL/flexibleServers/configurations": "a server parameter; the server is billed",
    "Microsoft.KeyVault/vaults/secrets": "billed per operation with its vault",
    "Microsoft.Network/privateEndpoints/privateDnsZoneGroups": "records the endpoint's DNS; the zone and endpoint are billed",
    "Microsoft.NetApp/netAppAccounts": "an account has no charge; capacity pools are billed (azure.microsoft.com/pricing/details/netapp/)",
    "Microsoft.NetApp/netAppAccounts/snapshotPolicies": "a policy has no charge; snapshots use the pool's capacity",
    "Microsoft.NetApp/netAppAccounts/capacityPools/volumes": "volumes use their pool's provisioned capacity, which is billed",
    "Microsoft.RecoveryServices/vaults/backupPolicies": "a policy has no charge; protected items are billed",
}

# Billed, on a basis hpclz has no meter for yet: the basis, and where it is stated.
UNPRICED: dict[str, str] = {
    "Microsoft.Network/publicIPAddresses": f"per IP-hour ({_VNET.replace('virtual-network', 'ip-addresses')})",
    "Microsoft.Network/privateEndpoints": "per endpoint-hour and per GB processed (azure.microsoft.com/pricing/details/private-link/)",
    "Microsoft.Network/privateDnsZones": "per zone-month and per million queries (azure.microsoft.com/pricing/details/dns/)",
    "Microsoft.Network/privateDnsZones/virtualNetworkLinks": "with the private zone (azure.microsoft.com/pricing/details/dns/)",
    "Microsoft.Network/virtualNetworks/virtualNetworkPeerings": f"per GB crossing the peering ({_VNET})",
    "Microsoft.Network/networkWatchers/flowLogs": "per GB of flow logs collected, plus their storage (azure.microsoft.com/pricing/details/network-watcher/)",
    "Microsoft.Storage/storageAccounts": f"capacity, transactions and redundancy ({_STORAGE})",
    "Microsoft.Storage/storageAccounts/fileServices/shares": "provisioned capacity (azure.microsoft.com/pricing/details/storage/files/)",
    "Microsoft.KeyVault/vaults": "per 10,000 operations (azure.microsoft.com/pricing/details/key-vault/)",
    "Microsoft.DBforMySQL/flexibleServers": "compute per hour (twice with high availability), storage and backup per GB (azure.microsoft.com/pricing/details/mysql/flexible-server/)",
    "Microsoft.Dashboard/grafana": "per instance-hour and active user (azure.microsoft.com/pricing/details/managed-grafana/)",
    "Microsoft.Monitor/accounts": f"per metric sample ingested and queried ({_MONITOR})",
    "Microsoft.AlertsManagement/prometheusRuleGroups": f"per rule evaluation ({_MONITOR})",
    "Microsoft.Insights/metricAlerts": f"per monitored time series a month ({_MONITOR})",
    "Microsoft.Insights/actionGroups": f"per notification sent beyond the free grant ({_MONITOR})",
    "Microsoft.OperationalInsights/workspaces": f"per GB ingested and retained ({_MONITOR})",
    "Microsoft.Security/pricings": "per protected resource-hour of each Defender plan (azure.microsoft.com/pricing/details/defender-for-cloud/)",
    "Microsoft.RecoveryServices/vaults": "per protected instance and backup storage GB (azure.microsoft.com/pricing/details/backup/)",
    "Microsoft.RecoveryServices/vaults/backupFabrics/protectionContainers/protectedItems": "per protected instance (azure.microsoft.com/pricing/details/backup/)",
    "Microsoft.StorageCache/amlFilesystems": "per provisioned TiB-hour (azure.microsoft.com/pricing/details/managed-lustre/)",
    "Microsoft.NetApp/netAppAccounts/capacityPools": "per provisioned TiB-hour of the service level (azure.microsoft.com/pricing/details/netapp/)",
    "Microsoft.Compute/virtualMachines": "per VM-hour of its size",
    "Microsoft.Network/bastionHosts": "per hour of its tier (azure.microsoft.com/pricing/details/azure-bastion/)",
    "Microsoft.Network/natGateways": f"per hour and per GB processed ({_VNET.replace('virtual-network', 'azure-nat-gateway')})",
}
