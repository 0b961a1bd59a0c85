"""Least privilege by removal, for every role assignment hpclz renders: one table (REMOVALS) names, for each kind of
assignment (role, principal, scope kind) any of the four presets renders, the step of deploy, cluster start, verify
or destroy that needs it and the test that removes exactly that assignment in the stand-in's world and shows the step
refused with Azure's error code while it succeeds with the assignment in place. Kinds no scenario proves yet are
listed apart (NO_SCENARIO_YET) with the step that should need them: a finding, reported by a strict xfail, never a
skip. The coverage tests render only (no stand-in), so a new or changed assignment fails here at once."""

from __future__ import annotations

import importlib
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from azure.storage.blob import BlobServiceClient

from hpclz.config.identity import BuiltinRole
from hpclz.config.loader import load_config
from hpclz.render.roles import ROLE_IDS
from hpclz.render.zone import LOCKER_IDENTITY, Zone
from tests.conftest import RunCli
from tests.deploy.outside import ids
from tests.deploy.role_assignments import PRESETS, Kind, kinds, principal_of, rendered, scope_kind
from tests.deploy.test_proving_ground import deployed, refused, scheduler_identity
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.cyclecloud import CycleCloud
from tests.support.arm_standin.data_planes import BlobFront
from tests.support.arm_standin.imds import Imds
from tests.support.arm_standin.reach import Origin
from tests.support.azurite import shared_azurite

T = TypeVar("T")
BLOB_CONTAINER = "Microsoft.Storage/storageAccounts/blobServices/containers"
ACCOUNT = "Microsoft.Storage/storageAccounts"
SCHEDULER = "identity.managed_identities.scheduler"
COMPUTE = "identity.managed_identities.compute"
LOCKER = "compute.cyclecloud"  # the locker identity: it exists because the CycleCloud server does (render/roles.py)
ARM_AUDIENCE = "https://management.azure.com/"
BLOB_CONTAINERS = (
    "tests.deploy.test_role_removals::test_each_blob_data_grant_on_a_container_is_what_lets_its_writer_write_there"
)
BOOT_READS = (
    "tests.deploy.test_role_removals::"
    "test_each_reader_grant_of_a_node_identity_is_what_lets_its_nodes_read_that_resource_at_boot"
)
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
        "CycleCloud creates the scheduler, login and nodearray VMs and scale sets", CYCLECLOUD_START
    ),
    Kind("Virtual Machine Contributor", SCHEDULER, "Microsoft.Network/virtualNetworks"): Removal(
        "CycleCloud joins each node's NIC to the compute subnet (subnets/join/action)", CYCLECLOUD_START
    ),
    Kind("Managed Identity Operator", SCHEDULER, "Microsoft.ManagedIdentity/userAssignedIdentities"): Removal(
        "CycleCloud attaches the node and locker identities to the VMs it creates", CYCLECLOUD_START
    ),
    Kind("Reader", SCHEDULER, "subscription"): Removal(
        "CycleCloud lists the VM sizes (Microsoft.Compute/skus/read)", CYCLECLOUD_START
    ),
    Kind("Storage Blob Data Contributor", SCHEDULER, ACCOUNT): Removal(
        "CycleCloud uploads the cluster's projects to the locker", CYCLECLOUD_START
    ),
    Kind("Key Vault Secrets User", SCHEDULER, "Microsoft.KeyVault/vaults/secrets"): Removal(
        "CycleCloud reads the cluster's secret parameters from Key Vault (the Slurm database password)",
        CYCLECLOUD_START,
    ),
    Kind("Storage Blob Data Reader", LOCKER, ACCOUNT): Removal(
        "each node reads the locker at boot (its cluster-init projects)", CYCLECLOUD_START
    ),
    # Each grant scoped to one container, removed in turn on ai-training: its writer's Put Blob there is refused.
    Kind("Storage Blob Data Contributor", COMPUTE, BLOB_CONTAINER): Removal(
        "a job on a compute node writes a checkpoint (or a dataset) with the node's identity", BLOB_CONTAINERS
    ),
    Kind("Storage Blob Data Contributor", "identity.groups.users", BLOB_CONTAINER): Removal(
        "a user writes a checkpoint (or a dataset) with their own Entra ID token", BLOB_CONTAINERS
    ),
    Kind("Storage Blob Data Contributor", "identity.groups.admins", BLOB_CONTAINER): Removal(
        "an admin's `hpclz deploy` from inside the VNet uploads the wheel to the locker's hpclz container",
        BLOB_CONTAINERS,
    ),
    # Each Reader scoped to one resource for a node identity, removed in turn on energy and manufacturing: the node's
    # boot-time read of that resource (hpclz-arm-get) is refused.
    Kind("Reader", COMPUTE, "Microsoft.Insights/dataCollectionEndpoints"): Removal(
        "nodes read the endpoint to build the remote-write URL at boot", BOOT_READS
    ),
    Kind("Reader", COMPUTE, "Microsoft.Insights/dataCollectionRules"): Removal(
        "nodes read the rule to build the remote-write URL at boot", BOOT_READS
    ),
    Kind("Reader", LOCKER, "Microsoft.Insights/dataCollectionEndpoints"): Removal(
        "login nodes read the endpoint to build the remote-write URL", BOOT_READS
    ),
    Kind("Reader", LOCKER, "Microsoft.Insights/dataCollectionRules"): Removal(
        "login nodes read the rule to build the remote-write URL", BOOT_READS
    ),
    Kind("Reader", COMPUTE, "Microsoft.ManagedIdentity/userAssignedIdentities"): Removal(
        "the scheduler and partitions read the compute identity's client ID for remote write", BOOT_READS
    ),
    Kind("Reader", LOCKER, "Microsoft.ManagedIdentity/userAssignedIdentities"): Removal(
        "login nodes read the locker identity's client ID for remote write", BOOT_READS
    ),
    Kind("Reader", COMPUTE, "Microsoft.StorageCache/amlFilesystems"): Removal(
        "nodes look up the Lustre MGS address at boot", BOOT_READS
    ),
    Kind("Reader", LOCKER, "Microsoft.StorageCache/amlFilesystems"): Removal(
        "login nodes look up the Lustre MGS address at boot", BOOT_READS
    ),
    Kind("Reader", COMPUTE, "Microsoft.NetApp/netAppAccounts/capacityPools/volumes"): Removal(
        "nodes look up the NetApp mount address at boot", BOOT_READS
    ),
    Kind("Reader", LOCKER, "Microsoft.NetApp/netAppAccounts/capacityPools/volumes"): Removal(
        "login nodes look up the NetApp mount address at boot", BOOT_READS
    ),
}

# Rendered, and no removal scenario proves them yet: the use src/hpclz/render/roles.py grants each for, unproved.
# Every entry is an open finding (test_no_rendered_assignment_lacks_a_removal_scenario, a strict xfail, fails once the
# list is empty: then drop it).
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
    Kind("Key Vault Secrets User", COMPUTE, "Microsoft.KeyVault/vaults/secrets"):
        "compute nodes read finance's pricing-library licence",
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


# ----- scenarios in a deployed preset's world -----
def _put_blob(url: str, token: str) -> tuple[int, str]:
    """A node's script writes a blob with a bearer token over its own network, as Blob storage's REST API takes it
    (Put Blob: learn.microsoft.com/rest/api/storageservices/put-blob): (status, x-ms-error-code)."""
    headers = {"Authorization": "Bearer " + token, "x-ms-version": "2021-08-06", "x-ms-blob-type": "BlockBlob"}
    request = urllib.request.Request(url, data=b"step", headers=headers, method="PUT")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("x-ms-error-code") or ""


def _imds_token(imds: Imds, node: dict[str, Any], identity: str, audience: str = "https://storage.azure.com/") -> str:
    """The token the node's metadata service hands its scripts for `identity` (an identity the node carries)."""
    query = urllib.parse.urlencode({"api-version": "2018-02-01", "resource": audience, "mi_res_id": identity})
    request = urllib.request.Request(
        f"{imds.route(node, imds.url)}/metadata/identity/oauth2/token?{query}", headers={"Metadata": "true"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(json.loads(response.read())["access_token"])


def _grants(arm: ArmStandIn, kind: Kind) -> dict[str, dict[str, Any]]:
    """The world's role assignments of this kind (as deploy made them): key -> resource."""
    prefix = f"hpclz: {kind.role} for {kind.principal}"
    return {
        key: r for key, r in arm.world.resources.items()
        if r["type"] == "Microsoft.Authorization/roleAssignments"
        and str(r["properties"].get("description", "")).startswith(prefix)
        and "/blobservices/default/containers/" in str(r["properties"].get("scope", "")).lower()
    }  # fmt: skip


def _removed(arm: ArmStandIn, key: str, step: Callable[[], T]) -> T:
    grant = arm.world.resources.pop(key)
    try:
        return step()
    finally:
        arm.world.resources[key] = grant


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_each_blob_data_grant_on_a_container_is_what_lets_its_writer_write_there(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ai-training deployed, and CycleCloud's nodes created; then each Storage Blob Data Contributor hpclz scopes to one
    container (the compute identity's, the users group's, the admins group's on the locker's hpclz container) removed
    in turn: its writer's Put Blob into that container, from the compute subnet, is refused with Blob storage's
    403 AuthorizationPermissionMismatch, and goes in once the assignment is back. The compute identity's token comes
    from the metadata service of a node that carries it, as a job's script gets it."""
    config = deployed(arm, tmp_path, run_cli, "ai-training", monkeypatch)
    assert refused(CycleCloud(arm.world, arm.proving.authorization, arm.proving.policy_log).start(
        as_identity=scheduler_identity(arm))) == []  # fmt: skip
    _, compute_subnet = ids(arm, config)
    origin = Origin(subnet=compute_subnet, address="203.0.113.50", name="a compute node")
    zone = Zone(load_config(config).config)
    groups = zone.config.identity.groups
    compute_identity = next(
        r["id"] for r in arm.world.resources.values()
        if r["type"] == "Microsoft.ManagedIdentity/userAssignedIdentities" and r["name"] == zone.identity_name("compute")
    )  # fmt: skip
    node = next(
        r for r in arm.world.resources.values()
        if r["type"] in ("Microsoft.Compute/virtualMachines", "Microsoft.Compute/virtualMachineScaleSets")
        and any(k.lower() == compute_identity.lower() for k in (r.get("identity") or {}).get("userAssignedIdentities", {}))
    )  # fmt: skip
    imds = Imds(arm).start()
    _, user_token = arm.proving.principal("a user", groups=tuple(groups.users))
    _, admin_token = arm.proving.principal("an admin", groups=tuple(groups.admins))
    writers = {
        Kind("Storage Blob Data Contributor", COMPUTE, BLOB_CONTAINER): _imds_token(imds, node, compute_identity),
        Kind("Storage Blob Data Contributor", "identity.groups.users", BLOB_CONTAINER): user_token,
        Kind("Storage Blob Data Contributor", "identity.groups.admins", BLOB_CONTAINER): admin_token,
    }
    azurite = shared_azurite()
    service = BlobServiceClient.from_connection_string(azurite.connection_string)
    fronts: dict[str, BlobFront] = {}
    proved: dict[str, tuple[tuple[int, str], tuple[int, str]]] = {}
    try:
        for kind, token in writers.items():
            grants = _grants(arm, kind)
            assert grants, str(kind)
            for key, grant in grants.items():
                scope = str(grant["properties"]["scope"])
                account, _, container = scope.partition("/blobServices/default/containers/")
                if account.lower() not in fronts:
                    fronts[account.lower()] = BlobFront(arm, account, azurite.account_url, origin).start()
                if not service.get_container_client(container).exists():
                    service.create_container(container)
                url = f"{fronts[account.lower()].account_url}/{container}/role-removal-{uuid.uuid4()}.bin"

                def step(url: str = url, token: str = token) -> tuple[int, str]:
                    return _put_blob(url, token)

                proved[f"{kind} ({container})"] = (_removed(arm, key, step), step())
    finally:
        for front in fronts.values():
            front.stop()
        imds.stop()
    # Every such grant ai-training renders was removed (checkpoints and datasets for the identity and the users, the
    # locker's hpclz container for the admins), each breaking its own writer only.
    assert len(proved) == sum(1 for kind, _ in rendered("ai-training") if kind in writers), proved
    assert proved and all(
        without == (403, "AuthorizationPermissionMismatch") and with_it == (201, "")
        for without, with_it in proved.values()
    ), proved


READ_SCOPES = (
    "Microsoft.StorageCache/amlFilesystems",
    "Microsoft.NetApp/netAppAccounts/capacityPools/volumes",
    "Microsoft.Insights/dataCollectionRules",
    "Microsoft.Insights/dataCollectionEndpoints",
    "Microsoft.ManagedIdentity/userAssignedIdentities",
)


def _carrier(arm: ArmStandIn, identity: str) -> dict[str, Any]:
    """A node CycleCloud created (VM or scale set) that carries `identity`."""
    return next(
        r for r in arm.world.resources.values()
        if r["type"] in ("Microsoft.Compute/virtualMachines", "Microsoft.Compute/virtualMachineScaleSets")
        and any(k.lower() == identity.lower() for k in (r.get("identity") or {}).get("userAssignedIdentities", {}))
    )  # fmt: skip


def _arm_read(arm: ArmStandIn, token: str, resource_id: str) -> str:
    """The node's boot-time read of one resource (hpclz-arm-get, templates/cloud-init/arm_get.py: a GET of the
    resource with the identity's token), through the real azure-mgmt-resource client: "read", or ARM's error code."""
    from azure.core.exceptions import HttpResponseError

    from hpclz.azure.clients import AzureClients, StaticTokenCredential
    from hpclz.render.arm import API_VERSIONS

    kind = scope_kind(resource_id.split("/providers/", 1)[1], "")
    clients = AzureClients(arm.subscription_id, credential=StaticTokenCredential(token))
    try:
        clients.resources.resources.get_by_id(resource_id, api_version=API_VERSIONS[kind])
    except HttpResponseError as exc:
        return str(exc.error.code if exc.error else exc.status_code)
    return "read"


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("preset", ["energy", "manufacturing"])
def test_each_reader_grant_of_a_node_identity_is_what_lets_its_nodes_read_that_resource_at_boot(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, preset: str
) -> None:
    """The preset deployed and CycleCloud's nodes created; then each Reader hpclz scopes to one resource for a node
    identity (the compute identity, and the locker identity the login nodes carry) removed in turn: the read a node
    makes at boot with that identity's token from its metadata service (the Lustre file system or NetApp volume for
    its mount address, the data collection rule and endpoint and the identity itself for Prometheus's remote write)
    is refused with ARM's AuthorizationFailed, and succeeds once the assignment is back."""
    config = deployed(arm, tmp_path, run_cli, preset, monkeypatch)
    assert refused(CycleCloud(arm.world, arm.proving.authorization, arm.proving.policy_log).start(
        as_identity=scheduler_identity(arm))) == []  # fmt: skip
    zone = Zone(load_config(config).config)
    identities = {
        path: next(
            r for r in arm.world.resources.values()
            if r["type"] == "Microsoft.ManagedIdentity/userAssignedIdentities" and r["name"] == zone.identity_name(role)
        )["id"]
        for path, role in ((COMPUTE, "compute"), (LOCKER, LOCKER_IDENTITY))
    }  # fmt: skip
    imds = Imds(arm).start()
    proved: dict[str, tuple[str, str]] = {}
    try:
        tokens = {path: _imds_token(imds, _carrier(arm, rid), rid, ARM_AUDIENCE) for path, rid in identities.items()}
        for key, grant in list(arm.world.resources.items()):
            if grant["type"] != "Microsoft.Authorization/roleAssignments":
                continue
            scope = str(grant["properties"].get("scope", ""))
            role, path = principal_of(str(grant["properties"].get("description", "")))
            if role != "Reader" or path not in tokens or "/providers/" not in scope:
                continue
            if scope_kind(scope.split("/providers/", 1)[1], "") not in READ_SCOPES:
                continue
            token = tokens[path]

            def step(scope: str = scope, token: str = token) -> str:
                return _arm_read(arm, token, scope)

            proved[f"Reader for {path} at {scope.split('/providers/', 1)[1]}"] = (_removed(arm, key, step), step())
    finally:
        imds.stop()
    expected = sum(
        1 for kind, _ in rendered(preset)
        if kind.role == "Reader" and kind.principal in (COMPUTE, LOCKER) and kind.scope in READ_SCOPES
    )  # fmt: skip
    assert expected and len(proved) == expected, proved
    assert all(v == ("AuthorizationFailed", "read") for v in proved.values()), proved
