"""Least privilege by removal, for every role assignment hpclz renders: one table (REMOVALS) names, for each kind of
assignment (role, principal, scope kind) any of the four presets renders, the step of deploy, cluster start, verify
or destroy that needs it and the test that removes exactly that assignment in the stand-in's world and shows the step
refused with Azure's error code while it succeeds with the assignment in place. Kinds no scenario proves yet are
listed apart (NO_SCENARIO_YET) with the step that should need them: a finding, reported by a strict xfail, never a
skip. The coverage tests render only (no stand-in), so a new or changed assignment fails here at once."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import pytest

from hpclz.config.identity import BuiltinRole
from hpclz.render.roles import ROLE_IDS
from tests.deploy.role_assignments import PRESETS, Kind, kinds, rendered

BLOB_CONTAINER = "Microsoft.Storage/storageAccounts/blobServices/containers"
ACCOUNT = "Microsoft.Storage/storageAccounts"
SCHEDULER = "identity.managed_identities.scheduler"
COMPUTE = "identity.managed_identities.compute"
LOCKER = "compute.cyclecloud"  # the locker identity: it exists because the CycleCloud server does (render/roles.py)
CYCLECLOUD_START = "tests.deploy.test_proving_ground::test_cyclecloud_creates_every_node_and_needs_every_role_it_holds"


@dataclass(frozen=True)
class Removal:
    step: str  # what fails without the assignment
    proved_by: str  # "module::test" that removes it and shows that step refused


# Proved: CycleCloud's identity's grants and the locker identity's read of the locker are each removed in turn by
# removal_analysis (tests/deploy/test_proving_ground.py) on energy, ai-training and manufacturing, which fails when a
# removal breaks no step of cluster start.
REMOVALS: dict[Kind, Removal] = {
    Kind("Virtual Machine Contributor", SCHEDULER, "resource group (compute)"): Removal(
        "CycleCloud creates the scheduler, login and nodearray VMs and their NICs", CYCLECLOUD_START
    ),
    Kind("Virtual Machine Contributor", SCHEDULER, "Microsoft.Network/virtualNetworks"): Removal(
        "CycleCloud joins each node's NIC to the compute subnet (subnets/join/action)", CYCLECLOUD_START
    ),
    Kind("Managed Identity Operator", SCHEDULER, "Microsoft.ManagedIdentity/userAssignedIdentities"): Removal(
        "CycleCloud attaches the node and locker identities to the VMs it creates", CYCLECLOUD_START
    ),
    Kind("Reader", SCHEDULER, "subscription"): Removal(
        "CycleCloud reads the subscription's VM sizes (resource SKUs) and quota", CYCLECLOUD_START
    ),
    Kind("Storage Blob Data Contributor", SCHEDULER, ACCOUNT): Removal(
        "CycleCloud writes the cluster's project files to its locker", CYCLECLOUD_START
    ),
    Kind("Key Vault Secrets User", SCHEDULER, "Microsoft.KeyVault/vaults/secrets"): Removal(
        "cluster import reads the Slurm database password from Key Vault", CYCLECLOUD_START
    ),
    Kind("Storage Blob Data Reader", LOCKER, ACCOUNT): Removal(
        "each node reads its cluster-init project from the locker at boot", CYCLECLOUD_START
    ),
}

# Rendered, and no removal scenario proves them yet: the use src/hpclz/render/roles.py grants each for, unproved. Every entry is an open finding
# (test_no_rendered_assignment_lacks_a_removal_scenario, a strict xfail, fails once the list is empty: then drop it).
NO_SCENARIO_YET: dict[Kind, str] = {
    Kind("Contributor", "identity.groups.admins", "resource group (compute)"): "admins repair and resize cluster VMs",
    Kind("Virtual Machine Administrator Login", "identity.groups.admins", "resource group (compute)"):
        "admins sign in to the CycleCloud VM with Entra ID SSH",
    Kind("Reader", "identity.groups.readers", "resource group (compute)"): "readers list the compute group",
    Kind("Reader", "identity.groups.readers", "resource group (identity)"): "readers list the identity group",
    Kind("Reader", "identity.groups.readers", "resource group (monitoring)"): "readers list the monitoring group",
    Kind("Reader", "identity.groups.readers", "resource group (network)"): "readers list the network group",
    Kind("Reader", "identity.groups.readers", "resource group (storage)"): "readers list the storage group",
    Kind("Grafana Admin", "identity.groups.admins", "Microsoft.Dashboard/grafana"):
        "admins sign in to Grafana and manage its dashboards (no Grafana data plane in the stand-in yet)",
    Kind("Monitoring Data Reader", "monitoring.prometheus.grafana", "Microsoft.Monitor/accounts"):
        "Grafana queries the workspace's Prometheus endpoint (no query endpoint in the stand-in yet, and the role's "
        "published JSON is not in data/builtin_roles.json)",
    Kind("Monitoring Metrics Publisher", COMPUTE, "Microsoft.Insights/dataCollectionRules"):
        "the scheduler and partitions publish their metrics through the data collection rule (no ingestion endpoint in the stand-in yet)",
    Kind("Monitoring Metrics Publisher", LOCKER, "Microsoft.Insights/dataCollectionRules"):
        "the login nodes publish their metrics through the data collection rule",
    Kind("Reader", COMPUTE, "Microsoft.Insights/dataCollectionEndpoints"): "nodes read the endpoint to build the remote-write URL at boot",
    Kind("Reader", COMPUTE, "Microsoft.Insights/dataCollectionRules"): "nodes read the rule to build the remote-write URL at boot",
    Kind("Reader", LOCKER, "Microsoft.Insights/dataCollectionEndpoints"): "login nodes read the endpoint to build the remote-write URL",
    Kind("Reader", LOCKER, "Microsoft.Insights/dataCollectionRules"): "login nodes read the rule to build the remote-write URL",
    Kind("Reader", COMPUTE, "Microsoft.ManagedIdentity/userAssignedIdentities"):
        "the scheduler and partitions read the compute identity's client ID for remote write",
    Kind("Reader", LOCKER, "Microsoft.ManagedIdentity/userAssignedIdentities"):
        "login nodes read the locker identity's client ID for remote write",
    Kind("Reader", COMPUTE, "Microsoft.StorageCache/amlFilesystems"): "nodes look up the Lustre MGS address at boot",
    Kind("Reader", LOCKER, "Microsoft.StorageCache/amlFilesystems"): "login nodes look up the Lustre MGS address at boot",
    Kind("Reader", COMPUTE, "Microsoft.NetApp/netAppAccounts/capacityPools/volumes"):
        "nodes look up the NetApp mount address at boot",
    Kind("Reader", LOCKER, "Microsoft.NetApp/netAppAccounts/capacityPools/volumes"):
        "login nodes look up the NetApp mount address at boot",
    Kind("Key Vault Secrets User", COMPUTE, "Microsoft.KeyVault/vaults/secrets"):
        "compute nodes read finance's pricing-library licence",
    Kind("Storage Blob Data Contributor", COMPUTE, BLOB_CONTAINER): "a compute node writes a checkpoint",
    Kind("Storage Blob Data Contributor", "identity.groups.users", BLOB_CONTAINER): "a user writes a dataset",
    Kind("Storage Blob Data Contributor", "identity.groups.admins", BLOB_CONTAINER):
        "admins stage hpclz's wheel in the locker's hpclz container",
    Kind("Storage Account Contributor", "storage.lustre.hsm.resource_provider_object_id", ACCOUNT):
        "Azure Managed Lustre's HSM links the filesystem to the container (no Lustre service in the stand-in)",
    Kind("Storage Blob Data Contributor", "storage.lustre.hsm.resource_provider_object_id", ACCOUNT):
        "Azure Managed Lustre's HSM imports and exports blobs (no Lustre service in the stand-in)",
}  # fmt: skip


def test_every_rendered_assignment_has_a_row() -> None:
    """A kind any preset renders that neither table names fails here, by name: a new assignment needs its scenario."""
    found = kinds()
    missing = sorted(str(k) for k in found if k not in REMOVALS and k not in NO_SCENARIO_YET)
    assert missing == [], f"role assignments with no removal scenario: {missing}"


def test_no_row_outlives_its_assignment() -> None:
    """A row whose kind no preset renders any more (role, principal or scope changed) fails: the table follows the
    render, never the other way round."""
    found = kinds()
    stale = sorted(str(k) for k in [*REMOVALS, *NO_SCENARIO_YET] if k not in found)
    assert stale == []
    assert not set(REMOVALS) & set(NO_SCENARIO_YET)


def test_each_proof_names_a_test_that_exists() -> None:
    for removal in REMOVALS.values():
        module, _, name = removal.proved_by.partition("::")
        assert callable(getattr(importlib.import_module(module), name, None)), removal.proved_by


@pytest.mark.parametrize("preset", PRESETS)
def test_each_assignment_carries_the_role_its_description_names(preset: str) -> None:
    """The kind's role is read from the ARM description; it must be the role the assignment grants."""
    by_name = {role.value: ROLE_IDS[role] for role in BuiltinRole}
    for kind, resource in rendered(preset):
        assert by_name[kind.role] in str(resource["properties"]["roleDefinitionId"]), (preset, str(kind))


@pytest.mark.xfail(strict=True, reason="open findings: rendered assignments no removal scenario proves yet")
def test_no_rendered_assignment_lacks_a_removal_scenario() -> None:
    assert sorted(str(k) for k in NO_SCENARIO_YET) == []
