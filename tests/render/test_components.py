"""What each component renders for the config fields that drive it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hpclz.errors import ExitCode, HpclzError
from hpclz.render.nsg import BASTION_RULES
from hpclz.render.writer import output_files
from tests.render.conftest import cyclecloud_vms, preset_plan, resources_of, variant


def test_key_vault_is_rbac_private_soft_deleted_and_purge_protected() -> None:
    (vault,) = resources_of(preset_plan("finance"), "Microsoft.KeyVault/vaults")
    props = vault["properties"]
    assert props["enableRbacAuthorization"] is True
    assert props["enableSoftDelete"] is True and props["enablePurgeProtection"] is True
    assert props["publicNetworkAccess"] == "Disabled"
    (endpoint,) = [
        r for r in resources_of(preset_plan("finance"), "Microsoft.Network/privateEndpoints") if "-kv-" in r["name"]
    ]
    assert endpoint["properties"]["privateLinkServiceConnections"][0]["properties"]["groupIds"] == ["vault"]
    zone_groups = resources_of(preset_plan("finance"), "Microsoft.Network/privateEndpoints/privateDnsZoneGroups")
    assert any(endpoint["name"] + "/default" == g["name"] for g in zone_groups)


def test_secret_values_never_reach_rendered_files(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "pl-9c1f-DO-NOT-LEAK"

    def edit(data: dict[str, Any]) -> None:
        data["identity"]["key_vault"]["secrets"] = {"pricing-library-licence": secret}

    plan = variant("finance", edit)
    (identity,) = [d for d in plan.deployments if d.component == "identity"]
    assert identity.secure_parameters == {
        "secretPricingLibraryLicence": "identity.key_vault.secrets.pricing-library-licence"
    }
    assert identity.template["parameters"]["secretPricingLibraryLicence"]["type"] == "securestring"
    assert identity.parameters == {}
    files = output_files(plan)
    assert not [name for name, text in files.items() if secret in text]
    assert "identity.key_vault.secrets.pricing-library-licence" in files["manifest.json"]


def test_secrets_whose_parameter_names_collide_are_a_config_error() -> None:
    # "a-b" and "aB" are different Key Vault secrets, but both would be passed as parameter secretAB (ARM
    # compares parameter names without case), so one secret would silently be lost.
    def edit(data: dict[str, Any]) -> None:
        data["identity"]["key_vault"]["secrets"] = {"a-b": "one", "aB": "two", "other": "three"}

    with pytest.raises(HpclzError, match=r"identity.key_vault.secrets: 'a-b' and 'aB'") as caught:
        variant("finance", edit)
    assert caught.value.exit_code == ExitCode.CONFIG_INVALID


def test_storage_account_is_private_keyless_versioned_with_soft_delete_and_lifecycle() -> None:
    plan = preset_plan("ai-training")
    data = "hpclz: storage.blob"  # not CycleCloud's locker (compute.cyclecloud) nor the NFS account
    (account,) = [a for a in resources_of(plan, "Microsoft.Storage/storageAccounts") if a["comments"] == data]
    props = account["properties"]
    assert props["minimumTlsVersion"] == "TLS1_2" and props["supportsHttpsTrafficOnly"] is True
    # Key access stays on only for Managed Lustre HSM, which requires it (amlfs-prerequisites.md); finance has none.
    assert props["allowBlobPublicAccess"] is False and props["allowSharedKeyAccess"] is True
    (keyless,) = [
        a for a in resources_of(preset_plan("finance"), "Microsoft.Storage/storageAccounts") if a["comments"] == data
    ]
    assert keyless["properties"]["allowSharedKeyAccess"] is False
    assert props["publicNetworkAccess"] == "Disabled"
    blobs = resources_of(plan, "Microsoft.Storage/storageAccounts/blobServices")
    (blob,) = [b for b in blobs if b["comments"] == "hpclz: storage.blob.soft_delete_days"]
    assert blob["properties"]["isVersioningEnabled"] is True
    assert blob["properties"]["deleteRetentionPolicy"] == {"enabled": True, "days": 14}
    assert blob["properties"]["containerDeleteRetentionPolicy"]["enabled"] is True
    (policy,) = resources_of(plan, "Microsoft.Storage/storageAccounts/managementPolicies")
    actions = policy["properties"]["policy"]["rules"][0]["definition"]["actions"]["baseBlob"]
    assert actions == {
        "tierToCool": {"daysAfterModificationGreaterThan": 14},
        "tierToCold": {"daysAfterModificationGreaterThan": 60},
    }


def test_lustre_links_its_hsm_container_in_its_subnet() -> None:
    (lustre,) = resources_of(preset_plan("energy"), "Microsoft.StorageCache/amlFilesystems")
    props = lustre["properties"]
    assert props["storageCapacityTiB"] == 48
    assert "'seismic-archive')]" in props["hsm"]["settings"]["container"]
    assert "snet-energy-lustre" in props["filesystemSubnet"]


def test_lustre_hsm_without_a_new_blob_account_is_a_config_error() -> None:
    def edit(data: dict[str, Any]) -> None:
        data["storage"]["blob"] = {"mode": "disabled"}

    with pytest.raises(HpclzError, match=r"storage.lustre.hsm") as caught:
        variant("energy", edit)
    assert caught.value.exit_code == ExitCode.CONFIG_INVALID


def test_netapp_volumes_land_in_the_delegated_subnet() -> None:
    plan = preset_plan("manufacturing")
    volumes = resources_of(plan, "Microsoft.NetApp/netAppAccounts/capacityPools/volumes")
    # storage.shared mode netapp adds home and /sched to the same pool.
    assert sorted(v["properties"]["creationToken"] for v in volumes) == ["apps", "hpclz-home", "hpclz-sched", "results"]
    assert all("snet-cae-netapp" in v["properties"]["subnetId"] for v in volumes)
    results = next(v for v in volumes if v["properties"]["creationToken"] == "results")
    assert results["properties"]["usageThreshold"] == 4096 * 1024**3
    (vnet,) = resources_of(plan, "Microsoft.Network/virtualNetworks")
    netapp = next(s for s in vnet["properties"]["subnets"] if "netapp" in s["name"])
    assert netapp["properties"]["delegations"][0]["properties"]["serviceName"] == "Microsoft.NetApp/volumes"
    assert "networkSecurityGroup" not in netapp["properties"]


def test_bastion_subnet_nsg_has_the_rules_azure_requires() -> None:
    nsgs = resources_of(preset_plan("energy"), "Microsoft.Network/networkSecurityGroups")
    (bastion,) = [n for n in nsgs if "bastion" in n["name"]]
    names = {r["name"] for r in bastion["properties"]["securityRules"]}
    assert {
        "AllowHttpsInbound",
        "AllowGatewayManagerInbound",
        "AllowSshRdpOutbound",
        "AllowAzureCloudOutbound",
    } <= names
    assert bastion["properties"]["securityRules"] == BASTION_RULES


def test_extra_nsg_rules_land_on_their_subnet() -> None:
    nsgs = resources_of(preset_plan("manufacturing"), "Microsoft.Network/networkSecurityGroups")
    (compute,) = [n for n in nsgs if "-compute-" in n["name"]]
    rule = next(r for r in compute["properties"]["securityRules"] if r["name"] == "allow-flexlm-from-hub")
    assert rule["properties"]["destinationPortRange"] == "27000-27010"
    assert rule["properties"]["direction"] == "Outbound"


def test_hub_peering_and_no_nat_or_bastion_when_disabled() -> None:
    plan = preset_plan("finance")
    (peering,) = resources_of(plan, "Microsoft.Network/virtualNetworks/virtualNetworkPeerings")
    assert peering["properties"]["useRemoteGateways"] is True
    assert resources_of(plan, "Microsoft.Network/natGateways") == []
    assert resources_of(plan, "Microsoft.Network/bastionHosts") == []
    assert resources_of(plan, "Microsoft.Network/publicIPAddresses") == []


def test_hub_firewall_gets_the_default_route_of_every_routable_subnet() -> None:
    plan = preset_plan("finance")
    (table,) = resources_of(plan, "Microsoft.Network/routeTables")
    assert table["apiVersion"] == "2024-05-01"
    (route,) = table["properties"]["routes"]
    assert route["properties"] == {
        "addressPrefix": "0.0.0.0/0",
        "nextHopType": "VirtualAppliance",
        "nextHopIpAddress": "10.0.1.4",
    }
    (vnet,) = resources_of(plan, "Microsoft.Network/virtualNetworks")
    table_id = f"[resourceId('Microsoft.Network/routeTables', '{table['name']}')]"
    assert table_id in vnet["dependsOn"]
    routed = {s["name"] for s in vnet["properties"]["subnets"] if s["properties"].get("routeTable") == {"id": table_id}}
    assert routed == {"snet-riskgrid-admin-prod-weu", "snet-riskgrid-compute-prod-weu", "snet-riskgrid-pe-prod-weu"}


def test_bastion_and_delegated_subnets_keep_their_own_routes() -> None:
    def edit(data: dict[str, Any]) -> None:
        data["network"]["hub_peering"] = {
            "remote_vnet_id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-hub"
            "/providers/Microsoft.Network/virtualNetworks/vnet-hub",
            "remote_address_space": ["10.250.0.0/16"],
            "firewall_private_ip": "10.250.1.4",
        }

    plan = variant("manufacturing", edit)
    (vnet,) = resources_of(plan, "Microsoft.Network/virtualNetworks")
    routed = {s["name"].split("-")[2] for s in vnet["properties"]["subnets"] if "routeTable" in s["properties"]}
    unrouted = {s["name"] for s in vnet["properties"]["subnets"] if "routeTable" not in s["properties"]}
    assert {"admin", "compute"} <= routed
    assert "AzureBastionSubnet" in unrouted and any("netapp" in name for name in unrouted)
    assert all(
        "delegations" not in s["properties"] for s in vnet["properties"]["subnets"] if "routeTable" in s["properties"]
    )


def test_no_route_table_without_a_firewall() -> None:
    for stem in ("energy", "ai-training", "manufacturing"):
        assert resources_of(preset_plan(stem), "Microsoft.Network/routeTables") == []


def test_existing_vnet_gets_nsgs_only_and_is_referenced_by_id() -> None:
    vnet_id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-net/providers/Microsoft.Network/virtualNetworks/vnet-corp"

    def edit(data: dict[str, Any]) -> None:
        data["network"]["vnet"]["mode"] = "existing"
        data["network"]["vnet"]["resource_id"] = vnet_id

    plan = variant("ai-training", edit)
    assert resources_of(plan, "Microsoft.Network/virtualNetworks") == []
    assert resources_of(plan, "Microsoft.Network/networkSecurityGroups")
    (nic,) = [n for n in resources_of(plan, "Microsoft.Network/networkInterfaces") if "-cc-" in n["name"]]
    subnet = nic["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"]
    assert subnet == f"{vnet_id}/subnets/snet-aitrain-admin-prod-eus2"


def test_cyclecloud_server_uses_ssh_keys_only_and_the_scheduler_identity() -> None:
    plan = preset_plan("ai-training")
    (vm,) = cyclecloud_vms(plan)
    linux = vm["properties"]["osProfile"]["linuxConfiguration"]
    assert linux["disablePasswordAuthentication"] is True
    assert "adminPassword" not in vm["properties"]["osProfile"]
    assert linux["ssh"]["publicKeys"][0]["keyData"].startswith("ssh-ed25519 ")
    (identity,) = vm["identity"]["userAssignedIdentities"]
    assert "'rg-aitrain-management-prod-eus2'" in identity and "id-aitrain-scheduler" in identity
    (compute,) = [d for d in plan.deployments if d.component == "compute"]
    assert compute.parameters == {"cycleCloudVmSize": "Standard_D4as_v5"}


def test_scheduler_identity_is_vm_contributor_on_the_compute_group_only() -> None:
    plan = preset_plan("ai-training")
    (compute,) = [d for d in plan.deployments if d.component == "compute"]
    grants = [r for r in compute.resources() if r["type"] == "Microsoft.Authorization/roleAssignments"]
    vm_contributor = [
        g for g in grants if "9980e02c-c2be-4d73-94e8-173b1dc7cf3c" in g["properties"]["roleDefinitionId"]
    ]
    assert len(vm_contributor) == 1 and "scope" not in vm_contributor[0]
    (storage,) = [d for d in plan.deployments if d.component == "storage"]
    scoped = [r for r in storage.resources() if r["type"] == "Microsoft.Authorization/roleAssignments"]
    assert scoped and all(
        r["scope"].startswith("Microsoft.") for r in scoped if "compute" in r["properties"]["principalId"]
    )


def test_guest_patch_window_is_assigned_only_to_the_vm_azure_patches() -> None:
    plan = preset_plan("ai-training")
    (config,) = resources_of(plan, "Microsoft.Maintenance/maintenanceConfigurations")
    assert config["properties"]["maintenanceWindow"]["recurEvery"] == "1Week Sunday"
    # The portal VM's (Canonical Ubuntu 22.04 gen2, on Azure's guest-patching list) alone: the CycleCloud server's
    # azurecyclecloud image is not on it (tests/render/test_guest_patching.py).
    scopes = sorted(a["scope"] for a in resources_of(plan, "Microsoft.Maintenance/configurationAssignments"))
    assert scopes == ["Microsoft.Compute/virtualMachines/vm-aitrain-ood-prod-eus2"]
    assert "maintenance" not in {d.component for d in preset_plan("manufacturing").deployments}


def test_monitoring_disabled_renders_no_monitoring_or_alerts() -> None:
    def edit(data: dict[str, Any]) -> None:
        data["monitoring"] = {"mode": "disabled"}

    components = [d.component for d in variant("manufacturing", edit).deployments]
    assert "monitoring" not in components and "alerts" not in components
    assert components[0] == "organization" and "compute" in components


def test_alert_criteria_is_an_arm_json_expression() -> None:
    (alert, *_) = resources_of(preset_plan("energy"), "Microsoft.Insights/metricAlerts")
    text = alert["properties"]["criteria"]
    assert text.startswith("[json('") and text.endswith("')]")
    criteria = json.loads(text[len("[json('") : -len("')]")].replace("''", "'"))
    assert criteria["allOf"][0]["metricName"] == "Percentage CPU"


def test_shared_home_is_a_private_nfs_premium_account_with_home_and_sched_shares() -> None:
    """NFS shares need a premium FileStorage account with secure transfer off and network-only access
    (learn.microsoft.com/azure/storage/files/files-nfs-protocol); hpclz reaches it through a private endpoint."""
    plan = preset_plan("energy")
    (account,) = [a for a in resources_of(plan, "Microsoft.Storage/storageAccounts") if a["kind"] == "FileStorage"]
    assert account["sku"]["name"] == "Premium_ZRS" and account["tags"]["hpclz-data"] == "true"
    props = account["properties"]
    assert props["supportsHttpsTrafficOnly"] is False and props["publicNetworkAccess"] == "Disabled"
    assert props["networkAcls"]["defaultAction"] == "Deny" and props["allowSharedKeyAccess"] is False
    shares = {
        s["name"]: s["properties"] for s in resources_of(plan, "Microsoft.Storage/storageAccounts/fileServices/shares")
    }
    assert shares == {
        f"{account['name']}/default/home": {
            "enabledProtocols": "NFS",
            "rootSquash": "NoRootSquash",
            "shareQuota": 1024,
        },
        f"{account['name']}/default/sched": {
            "enabledProtocols": "NFS",
            "rootSquash": "NoRootSquash",
            "shareQuota": 100,
        },
    }
    endpoints = resources_of(plan, "Microsoft.Network/privateEndpoints")
    (file_pe,) = [
        e
        for e in endpoints
        if e["properties"]["privateLinkServiceConnections"][0]["properties"]["groupIds"] == ["file"]
    ]
    assert file_pe["properties"]["privateLinkServiceConnections"][0]["properties"]["privateLinkServiceId"].endswith(
        f"'{account['name']}')]"
    )
    zones = [z["name"] for z in resources_of(plan, "Microsoft.Network/privateDnsZones")]
    assert "privatelink.file.core.windows.net" in zones


def test_shared_home_is_not_rendered_without_a_private_endpoints_subnet() -> None:
    def edit(data: dict[str, Any]) -> None:
        del data["network"]["vnet"]["subnets"]["private_endpoints"]

    plan = variant("ai-training", edit)
    assert [a for a in resources_of(plan, "Microsoft.Storage/storageAccounts") if a["kind"] == "FileStorage"] == []


POLICY = "Microsoft.Authorization/policyAssignments"
BUILTIN = "/providers/Microsoft.Authorization/policyDefinitions/"


def test_policies_are_assigned_at_every_landing_zone_group() -> None:
    """Built-in IDs as Azure/azure-policy defines them: General/AllowedLocations_Deny.json (e56962a6-...) and
    Tags/RequireTag_Deny.json (871b6d14-...), whose parameters are listOfAllowedLocations and tagName."""
    plan = preset_plan("energy")
    groups = {}
    for d in plan.deployments:
        found = [r for r in d.template["resources"] if r["type"] == POLICY]
        if found:
            groups[d.resource_group] = {r["name"]: r["properties"] for r in found}
    assert set(groups) == {d.resource_group for d in plan.deployments if d.resource_group}
    assert len(groups) == 5  # network, management, storage, monitoring, compute
    for assigned in groups.values():
        assert (
            assigned["hpclz-allowed-locations"]["policyDefinitionId"]
            == BUILTIN + "e56962a6-4747-49cd-b67b-bf8b01975c4c"
        )
        assert assigned["hpclz-allowed-locations"]["parameters"] == {
            "listOfAllowedLocations": {"value": ["southcentralus"]}
        }
        for tag in ("owner", "costCenter"):
            props = assigned[f"hpclz-require-tag-{tag}"]
            assert props["policyDefinitionId"] == BUILTIN + "871b6d14-10aa-478d-b590-94f262ecfa99"
            assert props["parameters"] == {"tagName": {"value": tag}}
        assert not any("storage-no-public" in name for name in assigned)


def test_regulated_baseline_denies_public_storage_and_no_policies_means_no_assignments() -> None:
    """Storage/StoragePublicNetworkAccess_AuditDeny.json (b2982f36-...) and
    Storage/ASC_Storage_DisallowPublicBlobAccess_Audit.json (4fa4b6c0-...) take an `effect` parameter."""
    finance = [r for d in preset_plan("finance").deployments for r in d.template["resources"] if r["type"] == POLICY]
    regulated = {
        r["properties"]["policyDefinitionId"].rsplit("/", 1)[1]: r["properties"]["parameters"]
        for r in finance
        if "storage-no-public" in r["name"]
    }
    assert regulated == {
        "b2982f36-99f2-4db5-8eff-283140c09693": {"effect": {"value": "Deny"}},
        "4fa4b6c0-31ca-4c0d-b10d-24b96f62a751": {"effect": {"value": "Deny"}},
    }
    manufacturing = preset_plan("manufacturing")
    assert [r for d in manufacturing.deployments for r in d.template["resources"] if r["type"] == POLICY] == []


def test_the_regulated_baseline_leaves_out_the_flow_log_account_only() -> None:
    """ "No public network" leaves out (notScopes) the VNet flow logs' own account, in the monitoring group that holds
    it and nowhere else; anonymous blob access stays denied there too. Network Watcher writes flow records as a
    trusted service only into an account whose public network access is enabled from selected networks
    (hpclz.render.policy._flow_log_exclusion cites it)."""
    plan = preset_plan("finance")
    excluded = {
        (d.component, r["name"]): r["properties"].get("notScopes")
        for d in plan.deployments
        for r in d.template["resources"]
        if r["type"] == POLICY and "storage-no-public" in r["name"]
    }
    flow = [r for d in plan.deployments if d.component == "flowlogs" for r in d.template["resources"]]
    account = next(r for r in flow if r["type"] == "Microsoft.Storage/storageAccounts")
    assert {k: v for k, v in excluded.items() if v} == {
        ("monitoring", "hpclz-storage-no-public-network"): [
            f"[resourceId('Microsoft.Storage/storageAccounts', '{account['name']}')]"
        ]
    }
    assert account["properties"]["networkAcls"]["defaultAction"] == "Deny"
    assert account["properties"]["networkAcls"]["ipRules"] == []
    assert account["properties"]["networkAcls"]["virtualNetworkRules"] == []


def test_cyclecloud_identity_holds_what_the_orchestrator_role_lists() -> None:
    """The "CycleCloud Orchestrator Role" (learn.microsoft.com/azure/cyclecloud/how-to/
    managed-identities) lists subnets/join/action, userAssignedIdentities/*/assign/action and subscription-level
    SKU, usage and rate-card reads; Virtual Machine Contributor on the compute group alone has none of them there."""
    plan = preset_plan("energy")
    scheduler_roles = [
        a
        for a in resources_of(plan, "Microsoft.Authorization/roleAssignments")
        if "identity.managed_identities.scheduler" in a["properties"]["description"]
    ]
    by_role = {a["properties"]["roleDefinitionId"].split("'")[-2]: a for a in scheduler_roles}
    vm_contributor, operator, reader = (
        "9980e02c-c2be-4d73-94e8-173b1dc7cf3c",
        "f1a07417-d97a-45cb-824c-7a7467783830",
        "acdd72a7-3385-48ef-bd42-f606fba81ae7",
    )
    assert {vm_contributor, operator, reader} <= set(by_role)
    assert by_role[operator]["scope"].startswith("Microsoft.ManagedIdentity/userAssignedIdentities/")
    assert by_role[reader]["name"].startswith("[guid(subscription().id")
    nested = {d["name"]: d for d in resources_of(plan, "Microsoft.Resources/deployments")}
    network = next(d for name, d in nested.items() if name.endswith("-network-roles"))
    assert network["resourceGroup"] == "rg-energy-network-prod-scus"
    (join,) = network["properties"]["template"]["resources"]
    assert join["scope"].startswith("Microsoft.Network/virtualNetworks/")
    subscription = next(d for name, d in nested.items() if name.endswith("-subscription-roles"))
    assert "resourceGroup" not in subscription and subscription["location"] == "southcentralus"
