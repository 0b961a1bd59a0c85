"""Least privilege by removal, for every role assignment hpclz renders: one table (REMOVALS) names, for each kind of
assignment (role, principal, scope kind) any of the four presets (or a config option, VARIANTS) renders, the step of deploy, cluster start, verify
or destroy that needs it and the test that removes exactly that assignment in the stand-in's world and shows the step
refused with Azure's error code while it succeeds with the assignment in place. Kinds no scenario proves yet are
listed apart (NO_SCENARIO_YET) with the step that should need them: a finding, reported by a strict xfail, never a
skip. The coverage tests render only (no stand-in), so a new or changed assignment fails here at once."""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast
from unittest import mock

import pytest
from azure.storage.blob import BlobServiceClient

from hpclz.config.identity import BuiltinRole
from hpclz.config.loader import load_config
from hpclz.render.health_gate import health_gate
from hpclz.render.job_storage import job_storage
from hpclz.render.roles import ROLE_IDS
from hpclz.render.zone import LOCKER_IDENTITY, Zone
from tests.conftest import REPO, RunCli
from tests.deploy.outside import ids
from tests.deploy.role_assignments import PRESETS, VARIANTS, Kind, kind_of, kinds, rendered
from tests.deploy.test_proving_ground import deployed, refused, scheduler_identity
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.cyclecloud import CycleCloud
from tests.support.arm_standin.data_planes import BlobFront, VaultFront
from tests.support.arm_standin.imds import Imds
from tests.support.arm_standin.reach import Origin
from tests.support.azurite import ACCOUNT as AZURITE_ACCOUNT
from tests.support.azurite import shared_azurite

T = TypeVar("T")
BLOB_CONTAINER = "Microsoft.Storage/storageAccounts/blobServices/containers"
ACCOUNT = "Microsoft.Storage/storageAccounts"
SCHEDULER = "identity.managed_identities.scheduler"
COMPUTE = "identity.managed_identities.compute"
HSM = "storage.lustre.hsm.resource_provider_object_id"  # the tenant's HPC Cache Resource Provider
LOCKER = "compute.cyclecloud"  # the locker identity: it exists because the CycleCloud server does (render/roles.py)
ARM_AUDIENCE = "https://management.azure.com/"
HERE = "tests.deploy.test_role_removals::"  # the scenarios below (SCENARIOS), run by test_each_removal_refuses...
BLOB_CONTAINERS = HERE + "blob_container_writes"
BLOB_READS = HERE + "blob_container_reads"
JOB_CREDENTIAL = HERE + "job_credential_mints"
GROUP_LISTS = HERE + "group_lists"
SECRET_READS = HERE + "secret_reads"
STORAGE_AUDIENCE = "https://storage.azure.com/"
READERS = "identity.groups.readers"
READ_SCOPES = ("Microsoft.StorageCache/amlFilesystems", "Microsoft.NetApp/netAppAccounts/capacityPools/volumes")
BOOT_READS = HERE + "boot_reads"
REMOTE_WRITE = HERE + "remote_write_lookups"
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
    Kind("Key Vault Secrets User", "portal.oidc.client_secret_name", "Microsoft.KeyVault/vaults/secrets"): Removal(
        "the portal VM reads its OIDC client secret at boot (hpclz-portal-secret)",
        "tests.deploy.test_proving_ground::test_the_portal_reads_its_client_secret_and_not_the_slurm_database_password",
    ),
    # Each grant scoped to one container, removed in turn: its writer's Put Blob there is refused.
    Kind("Storage Blob Data Contributor", COMPUTE, BLOB_CONTAINER): Removal(
        "a job on a compute node writes a checkpoint with the node's identity", BLOB_CONTAINERS
    ),
    # A datasets container: jobs read it with the compute identity and may not write it (render/roles.py).
    Kind("Storage Blob Data Reader", COMPUTE, BLOB_CONTAINER): Removal(
        "a job on a compute node reads a dataset with the node's identity (and cannot overwrite it)", BLOB_READS
    ),
    # The data account: Get User Delegation Key acts at the account (create-user-delegation-sas, "Assign permissions
    # with RBAC"); the job credential's prolog gets its key with the node's token.
    Kind("Storage Blob Delegator", COMPUTE, ACCOUNT): Removal(
        "a job's prolog gets a user delegation key and signs the job's SAS with it (hpclz-job-storage)", JOB_CREDENTIAL
    ),
    Kind("Storage Blob Data Contributor", "identity.groups.users", BLOB_CONTAINER): Removal(
        "a user writes a checkpoint (or a dataset) with their own Entra ID token", BLOB_CONTAINERS
    ),
    Kind("Storage Blob Data Contributor", "identity.groups.admins", BLOB_CONTAINER): Removal(
        "an admin's `hpclz deploy` from inside the VNet uploads the wheel to the locker's hpclz container",
        BLOB_CONTAINERS,
    ),
    # Each Reader scoped to one resource for a node identity, removed in turn: the node's boot-time read of that
    # resource (hpclz-arm-get for the file systems, hpclz-prometheus-url for remote write) is refused.
    Kind("Reader", COMPUTE, "Microsoft.Insights/dataCollectionEndpoints"): Removal(
        "nodes read the endpoint to build the remote-write URL at boot", REMOTE_WRITE
    ),
    Kind("Reader", COMPUTE, "Microsoft.Insights/dataCollectionRules"): Removal(
        "nodes read the rule to build the remote-write URL at boot", REMOTE_WRITE
    ),
    Kind("Reader", LOCKER, "Microsoft.Insights/dataCollectionEndpoints"): Removal(
        "login nodes read the endpoint to build the remote-write URL", REMOTE_WRITE
    ),
    Kind("Reader", LOCKER, "Microsoft.Insights/dataCollectionRules"): Removal(
        "login nodes read the rule to build the remote-write URL", REMOTE_WRITE
    ),
    Kind("Reader", COMPUTE, "Microsoft.ManagedIdentity/userAssignedIdentities"): Removal(
        "the scheduler and partitions read the compute identity's client ID for remote write", REMOTE_WRITE
    ),
    Kind("Reader", LOCKER, "Microsoft.ManagedIdentity/userAssignedIdentities"): Removal(
        "login nodes read the locker identity's client ID for remote write", REMOTE_WRITE
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
    # A member of the readers group lists each group's resources; a node reads each secret its identity is given.
    Kind("Reader", READERS, "resource group (compute)"): Removal(
        "a reader lists the compute group's resources", GROUP_LISTS
    ),
    Kind("Reader", READERS, "resource group (identity)"): Removal(
        "a reader lists the identity group's resources", GROUP_LISTS
    ),
    Kind("Reader", READERS, "resource group (monitoring)"): Removal(
        "a reader lists the monitoring group's resources", GROUP_LISTS
    ),
    Kind("Reader", READERS, "resource group (network)"): Removal(
        "a reader lists the network group's resources", GROUP_LISTS
    ),
    Kind("Reader", READERS, "resource group (storage)"): Removal(
        "a reader lists the storage group's resources", GROUP_LISTS
    ),
    Kind("Key Vault Secrets User", COMPUTE, "Microsoft.KeyVault/vaults/secrets"): Removal(
        "a job's prolog reads, as root with the node's identity, the secret the job is given into the job's folder "
        "(hpclz-job-storage; finance's pricing-library licence)",
        SECRET_READS,
    ),
    Kind("Contributor", "identity.groups.admins", "resource group (compute)"): Removal(
        "an admin runs `hpclz verify --via run-command` (a managed run command on a cluster VM)",
        HERE + "admin_run_commands",
    ),
    Kind("Grafana Admin", "identity.groups.admins", "Microsoft.Dashboard/grafana"): Removal(
        "an admin signs in to Grafana as its org admin (and lists its users)", HERE + "grafana_admin_sign_ins"
    ),
    Kind("Monitoring Metrics Publisher", COMPUTE, "Microsoft.Insights/dataCollectionRules"): Removal(
        "the scheduler and partitions remote-write their metrics through the data collection rule",
        HERE + "metrics_publishing",
    ),
    Kind("Monitoring Metrics Publisher", LOCKER, "Microsoft.Insights/dataCollectionRules"): Removal(
        "the login nodes remote-write their metrics through the data collection rule", HERE + "metrics_publishing"
    ),
    # Each Reader a Bastion tunnel needs (the host, and the target VM with its NIC), removed in turn: the tunnel to the
    # CycleCloud server, the portal and a login node is refused.
    Kind("Reader", "identity.groups.users", "Microsoft.Network/bastionHosts"): Removal(
        "a member of the users group opens a Bastion tunnel to the CycleCloud server, the portal or a login node",
        HERE + "bastion_tunnels",
    ),
    Kind("Reader", "identity.groups.admins", "Microsoft.Network/bastionHosts"): Removal(
        "a member of the admins group opens a Bastion tunnel to the CycleCloud server, the portal or a login node",
        HERE + "bastion_tunnels",
    ),
    Kind("Reader", "identity.groups.users", "resource group (compute)"): Removal(
        "a member of the users group opens a Bastion tunnel to the CycleCloud server, the portal or a login node "
        "(the target VM or scale set and its NIC)",
        HERE + "bastion_tunnels",
    ),
    # Managed Lustre's resource provider on the HSM account, each role removed in turn: creating the file system fails.
    Kind("Storage Account Contributor", HSM, ACCOUNT): Removal(
        "Azure Managed Lustre creates the file system linked to the HSM container (the account's keys)",
        HERE + "lustre_hsm_creations",
    ),
    Kind("Storage Blob Data Contributor", HSM, ACCOUNT): Removal(
        "Azure Managed Lustre creates the file system linked to the HSM container (its blobs and logs)",
        HERE + "lustre_hsm_creations",
    ),
}

# Rendered, and no removal scenario proves them yet: the use src/hpclz/render/roles.py grants each for, unproved.
# Every entry is an open finding (test_no_rendered_assignment_lacks_a_removal_scenario, a strict xfail, fails once the
# list is empty: then drop it).
NO_SCENARIO_YET: dict[Kind, str] = {
    Kind("Virtual Machine Administrator Login", "identity.groups.admins", "resource group (compute)"):
        "admins sign in to the CycleCloud VM with Entra ID SSH (refused only on the SSH prompt, \"Access denied: to "
        "sign-in you be assigned a role with action 'Microsoft.Compute/virtualMachines/login/action'\", "
        "howto-vm-sign-in-azure-ad-linux, \"Access denied: Azure role not assigned\": the AADSSHLoginForLinux "
        "extension's sign-in, which the stand-in does not serve)",
    Kind("Monitoring Data Reader", "monitoring.prometheus.grafana", "Microsoft.Monitor/accounts"):
        "Grafana queries the workspace's Prometheus endpoint (the role's published JSON is in no stored source, so "
        "the stand-in cannot judge a query by it: data/builtin_roles.json's _provenance)",
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


def test_each_proof_names_a_test_or_scenario_that_exists() -> None:
    """A proof here is a scenario test_each_removal_refuses_the_step_that_needs_it runs; elsewhere, a test."""
    for removal in REMOVALS.values():
        module, _, name = removal.proved_by.partition("::")
        assert callable(getattr(importlib.import_module(module), name, None)), removal.proved_by
        if removal.proved_by.startswith(HERE):
            assert name in SCENARIOS, removal.proved_by


@pytest.mark.parametrize("preset", [*PRESETS, *VARIANTS])
def test_each_assignment_carries_the_role_its_description_names(preset: str) -> None:
    """The kind's role is read from the ARM description; it must be the role the assignment grants."""
    by_name = {role.value: ROLE_IDS[role] for role in BuiltinRole}
    for kind, resource in rendered(preset):
        assert by_name[kind.role] in str(resource["properties"]["roleDefinitionId"]), (preset, str(kind))


@pytest.mark.xfail(strict=True, reason="open findings: rendered assignments no removal scenario proves yet")
def test_no_rendered_assignment_lacks_a_removal_scenario() -> None:
    assert sorted(str(k) for k in NO_SCENARIO_YET) == []


# ----- scenarios, each in one deployed preset's world -----
# A scenario runs its step once per rendered assignment of its kinds in the world, with that assignment removed and
# then with it back, and returns (kind, label, without, with it) for each; WORLDS deploys each preset once for all.
Outcome = tuple[Kind, str, object, object]


@dataclass
class World:
    """A preset deployed from outside the VNet (tests/deploy/test_proving_ground.deployed) and the nodes CycleCloud's
    actor created in it; a node in the compute subnet with the instance metadata service for the identities it
    carries."""

    arm: ArmStandIn
    preset: str
    zone: Zone
    imds: Imds
    origin: Origin

    def identity(self, role: str) -> str:
        return str(
            next(
                r["id"] for r in self.arm.world.resources.values()
                if r["type"] == "Microsoft.ManagedIdentity/userAssignedIdentities"
                and r["name"] == self.zone.identity_name(role)
            )
        )  # fmt: skip

    def carrier(self, identity: str) -> dict[str, Any]:
        """A node CycleCloud created (VM or scale set) that carries the identity."""
        return next(
            r for r in self.arm.world.resources.values()
            if r["type"] in ("Microsoft.Compute/virtualMachines", "Microsoft.Compute/virtualMachineScaleSets")
            and any(k.lower() == identity.lower() for k in (r.get("identity") or {}).get("userAssignedIdentities", {}))
        )  # fmt: skip

    def node_token(self, role: str, audience: str) -> str:
        """The token a node's metadata service hands its scripts for the identity (a node that carries it)."""
        identity = self.identity(role)
        node = self.carrier(identity)
        query = urllib.parse.urlencode({"api-version": "2018-02-01", "resource": audience, "mi_res_id": identity})
        url = f"{self.imds.route(node, self.imds.url)}/metadata/identity/oauth2/token?{query}"
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Metadata": "true"}), timeout=30) as answer:
            return str(json.loads(answer.read())["access_token"])

    def grants(self, *of: Kind) -> list[tuple[str, dict[str, Any], Kind]]:
        """The world's role assignments of these kinds, as deploy made them: (key, resource, kind)."""
        out = []
        for key, r in list(self.arm.world.resources.items()):
            if r["type"] == "Microsoft.Authorization/roleAssignments":
                kind = kind_of(self.preset, r)
                if kind in of:
                    out.append((key, r, kind))
        return out

    def without(self, key: str, step: Callable[[], T]) -> tuple[T, T]:
        """The step with the assignment removed, then with it back."""
        grant = self.arm.world.resources.pop(key)
        try:
            refused = step()
        finally:
            self.arm.world.resources[key] = grant
        return refused, step()


def scope_of(grant: dict[str, Any]) -> str:
    props = grant["properties"]
    return str(props.get("scope") or str(grant["id"]).split("/providers/Microsoft.Authorization/")[0])


def _put_blob(url: str, token: str) -> tuple[int, str]:
    """Put Blob with a bearer token, as a node's script or a user's tool sends it (learn.microsoft.com/rest/api/
    storageservices/put-blob): (status, x-ms-error-code)."""
    headers = {"Authorization": "Bearer " + token, "x-ms-version": "2021-08-06", "x-ms-blob-type": "BlockBlob"}
    request = urllib.request.Request(url, data=b"step", headers=headers, method="PUT")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("x-ms-error-code") or ""


def _arm_client(world: World, token: str) -> Any:
    from hpclz.azure.clients import AzureClients, StaticTokenCredential

    return AzureClients(world.arm.subscription_id, credential=StaticTokenCredential(token))


def _code(call: Callable[[], object], ok: str) -> str:
    """`ok` when the call goes through, else the service's error code (ARM's, or Key Vault's inner one)."""
    from azure.core.exceptions import HttpResponseError

    try:
        call()
    except HttpResponseError as exc:
        inner = getattr(exc.error, "innererror", None) or {}
        return str(
            inner.get("code")
            if isinstance(inner, dict) and inner.get("code")
            else (exc.error.code if exc.error else exc.status_code)
        )
    return ok


def blob_container_writes(world: World) -> list[Outcome]:
    """Each Storage Blob Data Contributor scoped to one container: its writer's Put Blob into that container from the
    compute subnet (the compute identity with its node's token; a member of the users or admins group with their
    own). Refused: Blob storage's 403 AuthorizationPermissionMismatch."""
    _, user = world.arm.proving.principal("a user", groups=tuple(world.zone.config.identity.groups.users))
    _, admin = world.arm.proving.principal("an admin", groups=tuple(world.zone.config.identity.groups.admins))
    writers = {
        Kind("Storage Blob Data Contributor", COMPUTE, BLOB_CONTAINER): world.node_token("compute", STORAGE_AUDIENCE),
        Kind("Storage Blob Data Contributor", "identity.groups.users", BLOB_CONTAINER): user,
        Kind("Storage Blob Data Contributor", "identity.groups.admins", BLOB_CONTAINER): admin,
    }
    out: list[Outcome] = []
    with _container_blobs(world) as blob_url:
        for key, grant, kind in world.grants(*writers):
            container, url = blob_url(grant)

            def step(url: str = url, token: str = writers[kind]) -> tuple[int, str]:
                return _put_blob(url, token)

            out.append((kind, container, *world.without(key, step)))
    return out


@contextlib.contextmanager
def _container_blobs(
    world: World, content: bytes | None = None
) -> Iterator[Callable[[dict[str, Any]], tuple[str, str]]]:
    """For a container-scoped grant: (container, the URL of a new blob there through its account's Blob front, as
    the grant's holder reaches it from the compute subnet). With `content`, the blob is written first with the
    account key (a user's upload), so that a read has something to read."""
    azurite = shared_azurite()
    service = BlobServiceClient.from_connection_string(azurite.connection_string)
    fronts: dict[str, BlobFront] = {}

    def blob_url(grant: dict[str, Any]) -> tuple[str, str]:
        account, _, container = scope_of(grant).partition("/blobServices/default/containers/")
        if account.lower() not in fronts:
            fronts[account.lower()] = BlobFront(world.arm, account, azurite.account_url, world.origin).start()
        if not service.get_container_client(container).exists():
            service.create_container(container)
        name = f"role-removal-{uuid.uuid4()}.bin"
        if content is not None:
            service.get_blob_client(container, name).upload_blob(content)
        return container, f"{fronts[account.lower()].account_url}/{container}/{name}"

    try:
        yield blob_url
    finally:
        for front in fronts.values():
            front.stop()


def _get_blob(url: str, token: str) -> tuple[int, str]:
    """Get Blob with a bearer token (learn.microsoft.com/rest/api/storageservices/get-blob): (status, x-ms-error-code)."""
    headers = {"Authorization": "Bearer " + token, "x-ms-version": "2021-08-06"}
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("x-ms-error-code") or ""


def blob_container_reads(world: World) -> list[Outcome]:
    """Each Storage Blob Data Reader of the compute identity on a datasets container: a job's Get Blob there with the
    node's token, and its Put Blob, which the reader role never allows (Storage Blob Data Reader has no write data
    action: learn.microsoft.com/azure/role-based-access-control/built-in-roles/storage). Refused: Blob storage's 403
    AuthorizationPermissionMismatch."""
    kind = Kind("Storage Blob Data Reader", COMPUTE, BLOB_CONTAINER)
    token = world.node_token("compute", STORAGE_AUDIENCE)
    out: list[Outcome] = []
    with _container_blobs(world, content=b"dataset") as blob_url:
        for key, grant, _ in world.grants(kind):
            container, url = blob_url(grant)

            def step(url: str = url) -> tuple[tuple[int, str], tuple[int, str]]:
                return _get_blob(url, token), _put_blob(url, token)

            out.append((kind, container, *world.without(key, step)))
    return out


JOB_STORAGE = REPO / "templates" / "cloud-init" / "job_storage.py"


def job_credential_mints(world: World) -> list[Outcome]:
    """Each Storage Blob Delegator of the compute identity at a data account: the job credential's prolog
    (templates/cloud-init/job_storage.py, with the settings hpclz renders for this zone) run as slurmd runs it, against
    the node's metadata service and the account's Blob front; then the job's Put Blob into a checkpoints container
    with the SAS it left. Refused: Get User Delegation Key's 403, and the prolog leaves no token (it never fails)."""
    kind = Kind("Storage Blob Delegator", COMPUTE, ACCOUNT)
    grants = world.grants(kind)
    if not grants:
        return []  # a zone without blob containers (manufacturing) renders no job credential
    identity = world.identity("compute")
    imds_url = world.imds.route(world.carrier(identity), world.imds.url)
    relative = identity.split("/", 3)[3]  # resourceGroups/...: the node reads its subscription from IMDS
    gate = health_gate("energy")
    storage = job_storage(world.zone, gate, relative)
    assert storage is not None
    containers = cast(list[dict[str, str]], storage.settings["containers"])
    writable = next(c["name"] for c in containers if "w" in c["permissions"])
    azurite = shared_azurite()
    service = BlobServiceClient.from_connection_string(azurite.connection_string)
    out: list[Outcome] = []
    for key, grant, _ in grants:
        account = scope_of(grant)
        front = BlobFront(world.arm, account, azurite.account_url, world.origin).start()
        if not service.get_container_client(writable).exists():
            service.create_container(writable)

        def step(front: BlobFront = front) -> tuple[str, int]:
            with tempfile.TemporaryDirectory() as tmp:
                settings = {
                    **storage.settings,
                    # The front signs as Azurite's account (its path-style URL names it), as the SDK's SAS there do.
                    "account": AZURITE_ACCOUNT,
                    "jobs": f"{tmp}/jobs",
                    "key_cache": f"{tmp}/key/user-delegation-key.json",
                }
                (Path(tmp) / "settings.json").write_text(json.dumps(settings))
                env = {
                    "PATH": os.environ["PATH"],
                    "HPCLZ_IMDS_URL": imds_url,
                    "HPCLZ_BLOB_URL": front.account_url,
                    "SLURM_JOB_ID": "1",
                    "SLURM_JOB_UID": str(os.getuid()),
                    "SLURM_JOB_GID": str(os.getgid()),
                }
                args = [sys.executable, str(JOB_STORAGE), "prolog", f"{tmp}/settings.json"]
                subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=True)
                sas = Path(tmp) / "jobs/1" / f"{writable}.sas"
                if not sas.exists():
                    return "no token", 0
                url = f"{front.account_url}/{writable}/job-{uuid.uuid4()}.ckpt?{sas.read_text().strip()}"
                return "minted", _put_blob_sas(url)

        try:
            out.append((kind, account.rsplit("/", 1)[-1], *world.without(key, step)))
        finally:
            front.stop()
    return out


def _put_blob_sas(url: str) -> int:
    request = urllib.request.Request(
        url, data=b"step", headers={"x-ms-version": "2026-10-06", "x-ms-blob-type": "BlockBlob"}, method="PUT"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def boot_reads(world: World) -> list[Outcome]:
    """Each Reader scoped to one resource for a node identity: the read a node makes of it at boot with that identity's
    metadata-service token (hpclz-arm-get, templates/cloud-init/arm_get.py: a GET of the resource) through the real
    azure-mgmt-resource client. Refused: ARM's AuthorizationFailed."""
    from hpclz.render.arm import API_VERSIONS

    tokens = {
        COMPUTE: world.node_token("compute", ARM_AUDIENCE),
        LOCKER: world.node_token(LOCKER_IDENTITY, ARM_AUDIENCE),
    }
    out: list[Outcome] = []
    for key, grant, kind in world.grants(*(Kind("Reader", who, t) for who in tokens for t in READ_SCOPES)):
        resources = _arm_client(world, tokens[kind.principal]).resources.resources
        scope = scope_of(grant)

        def step(scope: str = scope, resources: Any = resources, api: str = API_VERSIONS[kind.scope]) -> str:
            return _code(lambda: resources.get_by_id(scope, api_version=api), "read")

        out.append((kind, scope.split("/providers/", 1)[1], *world.without(key, step)))
    return out


def group_lists(world: World) -> list[Outcome]:
    """Each Reader of the readers group on a resource group: a member lists that group's resources (az resource list
    -g, through the real azure-mgmt-resource client). Refused: ARM's AuthorizationFailed."""
    _, reader = world.arm.proving.principal("a reader", groups=tuple(world.zone.config.identity.groups.readers))
    resources = _arm_client(world, reader).resources.resources
    out: list[Outcome] = []
    for key, grant, kind in world.grants(*(k for k in REMOVALS if k.principal == READERS)):
        group = scope_of(grant).rsplit("/", 1)[-1]

        def step(group: str = group) -> str:
            return _code(lambda: list(resources.list_by_resource_group(group)), "listed")

        out.append((kind, group, *world.without(key, step)))
    return out


def secret_reads(world: World) -> list[Outcome]:
    """Each Key Vault Secrets User of the compute identity on one secret: the job credential's prolog (templates/
    cloud-init/job_storage.py, with the settings hpclz renders for this zone) run as slurmd runs it, as root, against
    the node's metadata service and the vault's front reached from the compute subnet; the job's file
    secrets/<name>. Refused: Key Vault's 403 (ForbiddenByRbac), and the prolog leaves no file, names the secret in its
    log and still ends 0, so the job runs. The value never appears in what it prints."""
    kind = Kind("Key Vault Secrets User", COMPUTE, "Microsoft.KeyVault/vaults/secrets")
    grants = world.grants(kind)
    if not grants:
        return []
    identity = world.identity("compute")
    imds_url = world.imds.route(world.carrier(identity), world.imds.url)
    storage = job_storage(world.zone, health_gate(world.preset), identity.split("/", 3)[3])
    assert storage is not None
    uid = 65534 if os.geteuid() == 0 else os.getuid()  # the job's user: anyone but root where the test may chown
    out: list[Outcome] = []
    for key, grant, _ in grants:
        vault, _, name = scope_of(grant).partition("/secrets/")
        assert name in cast(list[str], storage.settings["secrets"])  # the prolog fetches what the grant allows
        value = f"licence-{uuid.uuid4()}"
        front = VaultFront(world.arm, vault, world.origin).start()
        front.secrets[name] = [("1", value)]

        def step(front: VaultFront = front, name: str = name, value: str = value) -> tuple[object, ...]:
            with tempfile.TemporaryDirectory() as tmp:
                settings = {
                    **storage.settings,
                    "containers": [],  # the SAS has its own scenario (job_credential_mints)
                    "vault_url": front.vault_url,
                    "secrets": [name],
                    "jobs": f"{tmp}/jobs",
                    "key_cache": f"{tmp}/key/user-delegation-key.json",
                }
                (Path(tmp) / "settings.json").write_text(json.dumps(settings))
                env = {
                    "PATH": os.environ["PATH"],
                    "HPCLZ_IMDS_URL": imds_url,
                    "SSL_CERT_FILE": str(world.arm.cert),  # the front's TLS certificate, as the SDK clients trust it
                    "SLURM_JOB_ID": "1",
                    "SLURM_JOB_UID": str(uid),
                    "SLURM_JOB_GID": str(uid),
                }
                args = [sys.executable, str(JOB_STORAGE), "prolog", f"{tmp}/settings.json"]
                done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=False)
                assert value not in done.stdout + done.stderr
                path = Path(tmp) / "jobs/1/secrets" / name
                if not path.exists():
                    logged = f"no secret {name}: HTTPError 403" in done.stderr
                    return "no file", done.returncode, logged
                info = path.stat()
                return "fetched", done.returncode, path.read_text() == value, oct(info.st_mode & 0o777), info.st_uid

        try:
            out.append((kind, name, *world.without(key, step)))
        finally:
            front.stop()
    return out


def admin_run_commands(world: World) -> list[Outcome]:
    """Contributor of the admins group on the compute group: a member runs a managed run command on a cluster VM, the
    way `hpclz verify --via run-command` does (hpclz.azure.run_command.run_inline, through the real
    azure-mgmt-compute client; Microsoft.Compute/virtualMachines/runCommands/write, which Contributor's "*" holds).
    Refused: ARM's AuthorizationFailed, as hpclz's one-line error."""
    from hpclz.azure.run_command import run_inline
    from hpclz.errors import HpclzError

    _, admin = world.arm.proving.principal("an admin", groups=tuple(world.zone.config.identity.groups.admins))
    clients = _arm_client(world, admin)
    group = world.zone.rg["compute"].lower()
    vm = next(
        str(r["id"]) for r in world.arm.world.resources.values()
        if r["type"] == "Microsoft.Compute/virtualMachines" and f"/resourcegroups/{group}/" in str(r["id"]).lower()
    )  # fmt: skip

    def step() -> str:
        try:
            done = run_inline(clients, vm, "hpclz-role-removal", "echo ran", timeout_s=60, progress=lambda _: None)
        except HpclzError as exc:
            return "AuthorizationFailed" if "AuthorizationFailed" in str(exc) else str(exc)
        return "ran" if done.exit_code == 0 and done.stdout.strip() == "ran" else f"{done.state}: {done.stderr}"

    kind = Kind("Contributor", "identity.groups.admins", "resource group (compute)")
    return [(kind, group, *world.without(key, step)) for key, _, kind in world.grants(kind)]


REMOTE_WRITE_SCOPES = (
    "Microsoft.Insights/dataCollectionRules",
    "Microsoft.Insights/dataCollectionEndpoints",
    "Microsoft.ManagedIdentity/userAssignedIdentities",
)
HELPER = REPO / "templates" / "cloud-init" / "prometheus_url.py"


def _remote_write_helpers(world: World) -> tuple[str, str, str, dict[str, tuple[Any, str, str]]]:
    """The subscription's prefix, the Prometheus rule and endpoint the identities' Readers name (the zone has other
    rules), and per node identity the node's helper (templates/cloud-init/prometheus_url.py, pointed at the stand-in
    through its HPCLZ_IMDS and HPCLZ_ARM from a node that carries the identity), the identity's ID relative to the
    subscription and its client ID."""
    sub = f"/subscriptions/{world.arm.subscription_id}/"
    rule, endpoint = (
        next(scope_of(g) for _, g, _ in world.grants(Kind("Reader", COMPUTE, t)))
        for t in ("Microsoft.Insights/dataCollectionRules", "Microsoft.Insights/dataCollectionEndpoints")
    )
    helpers: dict[str, tuple[Any, str, str]] = {}
    for path, role in ((COMPUTE, "compute"), (LOCKER, LOCKER_IDENTITY)):
        identity = world.identity(role)
        node = world.carrier(identity)
        env = {"HPCLZ_IMDS": world.imds.route(node, world.imds.url) + "/metadata", "HPCLZ_ARM": world.arm.url}
        with mock.patch.dict(os.environ, env):
            spec = importlib.util.spec_from_file_location(f"prometheus_url_{role}", HELPER)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        client_id = world.arm.world.resources[identity.lower()]["properties"]["clientId"]
        helpers[path] = (module, identity.removeprefix(sub), client_id)
    return sub, rule, endpoint, helpers


def remote_write_lookups(world: World) -> list[Outcome]:
    """Each Reader of a node identity on itself, the data collection rule or its endpoint: the node's own helper
    (templates/cloud-init/prometheus_url.py, its lookup: three ARM reads with the identity's token from the node's
    metadata service) builds Prometheus's remote-write URL and client ID, or is refused with ARM's
    AuthorizationFailed on the read the removal took away. The helper runs as it is, pointed at the stand-in through
    its HPCLZ_IMDS and HPCLZ_ARM; its retry loop (main) is left out, which waits minutes between attempts."""
    if not world.grants(Kind("Reader", COMPUTE, "Microsoft.Insights/dataCollectionRules")):
        return []  # no managed Prometheus in this preset
    sub, rule, endpoint, helpers = _remote_write_helpers(world)
    immutable = world.arm.world.resources[rule.lower()]["properties"]["immutableId"]
    ingest = world.arm.world.resources[endpoint.lower()]["properties"]["metricsIngestion"]["endpoint"]
    out: list[Outcome] = []
    for key, grant, kind in world.grants(*(Kind("Reader", who, t) for who in helpers for t in REMOTE_WRITE_SCOPES)):
        module, identity, client_id = helpers[kind.principal]
        expected_url = ingest.rstrip("/") + module.WRITE_PATH.format(immutable)

        def step(
            module: Any = module, identity: str = identity, client_id: str = client_id, expected_url: str = expected_url
        ) -> str:
            with mock.patch.dict(os.environ, {"SSL_CERT_FILE": str(world.arm.cert)}):
                try:
                    url, got = module.lookup(identity, rule.removeprefix(sub), endpoint.removeprefix(sub))
                except urllib.error.HTTPError as exc:
                    return str(json.loads(exc.read() or b"{}").get("error", {}).get("code", exc.code))
            return "built" if (url, got) == (expected_url, client_id) else f"{url} {got}"

        out.append((kind, scope_of(grant).split("/providers/", 1)[1], *world.without(key, step)))
    return out


HSM_KINDS = (Kind("Storage Account Contributor", HSM, ACCOUNT), Kind("Storage Blob Data Contributor", HSM, ACCOUNT))
AMLFS = "Microsoft.StorageCache/amlFilesystems"


def lustre_hsm_creations(world: World) -> list[Outcome]:
    """Each role of the tenant's HPC Cache Resource Provider on the HSM account: Managed Lustre's creation of the file
    system linked to the account's container fails without it ("If the file system can't access your blob container,
    file system creation fails": MicrosoftDocs/azure-stack-docs@f1e86c5c94e6ff51da9c97c87bc5084b963f3a8d:
    azure-managed-lustre/amlfs-prerequisites.md; the stand-in's check: tests/support/arm_standin/managed_lustre.py).
    The step: the deployed file system is taken out of the world and the deploying user deploys it again, the resource
    as the preset renders it, through the real azure-mgmt-resource client. Refused: the deployment fails with ARM's
    ResourceDeploymentFailure for the file system (terminal provisioning state Failed); Azure documents no code of the
    service's own, so none is asserted."""
    found = world.grants(*HSM_KINDS)
    lustre = world.zone.lustre_new
    if not found or lustre is None or lustre.hsm is None:
        return []  # no HSM in this preset
    from azure.core.exceptions import HttpResponseError

    from hpclz.render.build import build_plan

    world.arm.proving.storage_cache_rp = str(lustre.hsm.resource_provider_object_id)
    group, rendered_fs = next(
        (d.resource_group, r) for d in build_plan(world.zone.config).deployments if d.resource_group
        for r in d.resources() if str(r.get("type", "")).lower() == AMLFS.lower()
    )  # fmt: skip
    key, deployed_fs = next(
        (k, r) for k, r in world.arm.world.resources.items()
        if r["type"].lower() == AMLFS.lower() and r["name"] == rendered_fs["name"]
    )  # fmt: skip
    template = {
        "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
        "contentVersion": "1.0.0.0",
        "resources": [{k: v for k, v in rendered_fs.items() if k != "dependsOn"}],  # what it waited for is there
    }
    deployments = _arm_client(world, world.arm.token).deployments.deployments

    def step() -> str:
        name = f"role-removal-amlfs-{uuid.uuid4().hex[:8]}"
        world.arm.world.resources.pop(key)
        try:
            body = {"properties": {"mode": "Incremental", "template": template}}
            with contextlib.suppress(HttpResponseError):  # the failure is read from the deployment below
                deployments.begin_create_or_update(group, name, body).result()
            error = deployments.get(group, name).properties.error
            return "created" if error is None else str(error.details[0].code)
        finally:
            world.arm.world.resources[key] = deployed_fs

    try:
        return [(kind, kind.role, *world.without(k, step)) for k, _, kind in found]
    finally:
        world.arm.proving.storage_cache_rp = None


def grafana_admin_sign_ins(world: World) -> list[Outcome]:
    """Grafana Admin of the admins group on the Managed Grafana instance: a member signs in with their Entra ID token
    and lists the organization's users (Grafana's GET /api/org/users, for org admins), as the Grafana role the
    assignment gives (tests/support/arm_standin/data_planes.GrafanaFront: the role's data action
    Microsoft.Dashboard/grafana/ActAsGrafanaAdmin/action). Refused: Managed Grafana's "No Roles Assigned" page
    (articles/managed-grafana/troubleshoot-managed-grafana.md)."""
    import ssl

    from tests.support.arm_standin.data_planes import GrafanaFront

    who, admin = world.arm.proving.principal("an admin", groups=tuple(world.zone.config.identity.groups.admins))
    context = ssl.create_default_context(cafile=str(world.arm.cert))
    out: list[Outcome] = []
    for key, grant, kind in world.grants(
        Kind("Grafana Admin", "identity.groups.admins", "Microsoft.Dashboard/grafana")
    ):
        front = GrafanaFront(world.arm, scope_of(grant), world.origin).start()
        request = urllib.request.Request(
            f"{front.endpoint}/api/org/users",
            headers={"Authorization": "Bearer " + admin, "Accept": "application/json"},
        )

        def step(request: urllib.request.Request = request) -> str:
            try:
                with urllib.request.urlopen(request, timeout=30, context=context) as answer:
                    users = json.loads(answer.read())
            except urllib.error.HTTPError as exc:
                page = exc.read().decode()
                return "No Roles Assigned" if "<h1>No Roles Assigned</h1>" in page else f"{exc.code} {page}"
            return next((str(u["role"]) for u in users if u["login"] == who.object_id), f"not listed: {users}")

        try:
            out.append((kind, scope_of(grant).rsplit("/", 1)[-1], *world.without(key, step)))
        finally:
            front.stop()
    return out


MONITOR_AUDIENCE = "https://monitor.azure.com/"  # Prometheus's azuread remote-write token for Azure's public cloud


def metrics_publishing(world: World) -> list[Outcome]:
    """Monitoring Metrics Publisher of a node identity on the data collection rule: the node's Prometheus remote-writes
    its metrics to the endpoint's ingestion URL for the rule (the URL the node's own helper builds,
    templates/cloud-init/prometheus_url.py, with the identity the node's metrics.sh.j2 hands Prometheus), with that
    identity's metadata-service token for Azure Monitor. Prometheus itself is not installed here: the step is the HTTP
    call it makes (a POST of a snappy-compressed protobuf body with its remote-write headers, here an empty one). The
    endpoint: tests/support/arm_standin/data_planes.IngestionFront. Refused: 403 OperationFailed, "The authentication
    token provided does not have access to ingest data for the data collection rule ..."."""
    import ssl

    from tests.support.arm_standin.data_planes import IngestionFront

    kinds = [
        Kind("Monitoring Metrics Publisher", who, "Microsoft.Insights/dataCollectionRules") for who in (COMPUTE, LOCKER)
    ]
    found = world.grants(*kinds)
    if not found:
        return []  # no managed Prometheus in this preset
    sub, rule, endpoint, helpers = _remote_write_helpers(world)
    front = IngestionFront(world.arm, endpoint, world.origin).start()
    context = ssl.create_default_context(cafile=str(world.arm.cert))
    tokens = {
        COMPUTE: world.node_token("compute", MONITOR_AUDIENCE),
        LOCKER: world.node_token(LOCKER_IDENTITY, MONITOR_AUDIENCE),
    }
    urls = {}
    out: list[Outcome] = []
    try:
        with mock.patch.dict(os.environ, {"SSL_CERT_FILE": str(world.arm.cert)}):
            for who, (module, identity, _) in helpers.items():
                built, _ = module.lookup(identity, rule.removeprefix(sub), endpoint.removeprefix(sub))
                # The endpoint's ingestion host is Azure's name; the node's route to it here is the front.
                urls[who] = front.url + built.split(".metrics.ingest.monitor.azure.com", 1)[1]
        for key, grant, kind in found:
            url = urls[kind.principal]
            # Remote write's request headers (prometheus.io/docs/specs/remote_write_spec, "Protocol").
            headers = {
                "Authorization": "Bearer " + tokens[kind.principal],
                "Content-Encoding": "snappy",
                "Content-Type": "application/x-protobuf",
                "X-Prometheus-Remote-Write-Version": "0.1.0",
            }
            request = urllib.request.Request(url, data=b"", headers=headers, method="POST")

            def step(request: urllib.request.Request = request) -> tuple[int, str]:
                try:
                    with urllib.request.urlopen(request, timeout=30, context=context) as answer:
                        return answer.status, ""
                except urllib.error.HTTPError as exc:
                    return exc.code, str(json.loads(exc.read() or b"{}").get("error", {}).get("code", ""))

            out.append((kind, scope_of(grant).rsplit("/", 1)[-1], *world.without(key, step)))
    finally:
        front.stop()
    return out


# Each scenario and what its step answers without the assignment, then with it.
BASTION = "Microsoft.Network/bastionHosts"
USERS = "identity.groups.users"
ADMINS = "identity.groups.admins"
BASTION_KINDS = (
    Kind("Reader", USERS, BASTION),
    Kind("Reader", ADMINS, BASTION),
    Kind("Reader", USERS, "resource group (compute)"),
)


def _bastion_targets(world: World) -> list[list[str]]:
    """What a tunnel to each target reads: the VMs deploy made in the compute group (the CycleCloud server, the portal)
    with the NIC each names, and the login nodes' scale set CycleCloud created there (the stand-in models no scale-set
    instances or their NICs, so the tunnel to a login node reads the scale set)."""
    group = f"/resourcegroups/{world.zone.rg['compute'].lower()}/"
    mine = [r for r in world.arm.world.resources.values() if group in str(r["id"]).lower()]
    nics = {str(r["name"]).lower(): str(r["id"]) for r in mine if r["type"] == "Microsoft.Network/networkInterfaces"}
    targets = []
    for vm in (r for r in mine if r["type"] == "Microsoft.Compute/virtualMachines"):
        refs = ((vm.get("properties") or {}).get("networkProfile") or {}).get("networkInterfaces") or []
        # An ID, or the template's resourceId('...networkInterfaces', '<name>') as deploy wrote it.
        ends = [str(ref.get("id", "")).lower().rstrip("')]").rsplit("/", 1)[-1].rsplit("'", 1)[-1] for ref in refs]
        named = [nics[end] for end in ends if end in nics]
        if named:  # a VM deploy made (CycleCloud's own VMs name their NIC otherwise in the stand-in)
            targets.append([str(vm["id"]), *named])
    targets += [
        [str(r["id"])]
        for r in mine
        if r["type"] == "Microsoft.Compute/virtualMachineScaleSets" and "login" in str(r["name"]).lower()
    ]
    # Every way in the docs name is a target: the CycleCloud server, the portal and the login nodes where configured.
    config, names = world.zone.config, world.zone.names
    expected = {names.name("virtual_machine", "cc").lower()}
    expected |= {names.name("virtual_machine", "ood").lower()} if config.portal.enabled else set()
    got = {t[0].rsplit("/", 1)[-1].lower() for t in targets}
    assert expected <= got, (expected, got)
    assert any("login" in g for g in got) == (config.compute.login.count > 0), got
    return targets


def bastion_tunnels(world: World) -> list[Outcome]:
    """Reader for the users and admins groups on the Bastion host and for the users group on the compute group: a
    member opens `az network bastion tunnel` (or `ssh`) to the CycleCloud server, the portal VM and a login node. The
    reads it makes with the member's token, through the real azure-mgmt-resource client, in order: the Bastion host
    (the CLI's Show before anything else: Azure/azure-cli-extensions@00f32d8:src/bastion/azext_bastion/custom.py,
    create_bastion_tunnel and ssh_bastion_host lines 138-147), then the target VM and the NIC with its private IP,
    which the Bastion service reads with the token the CLI hands it (Azure Bastion's "Required roles": Reader on the
    VM, on that NIC and on the Bastion resource, learn.microsoft.com/azure/bastion/bastion-connect-vm-ssh-linux).
    A tunnel stops at its first refused read. Refused: ARM's AuthorizationFailed, for every target."""
    from hpclz.render.arm import API_VERSIONS

    grants = world.grants(*BASTION_KINDS)
    if not grants:  # no Bastion in this preset (finance: users arrive over hub peering)
        return []
    groups = world.zone.config.identity.groups
    _, user = world.arm.proving.principal("a user", groups=tuple(groups.users))
    _, admin = world.arm.proving.principal("an admin", groups=tuple(groups.admins))
    tokens = {USERS: user, ADMINS: admin}
    bastion = next(str(r["id"]) for r in world.arm.world.resources.values() if r["type"] == BASTION)
    targets = _bastion_targets(world)
    out: list[Outcome] = []
    for key, grant, kind in grants:
        resources = _arm_client(world, tokens[kind.principal]).resources.resources

        def tunnel(reads: list[str], resources: Any = resources) -> str:
            for rid in reads:
                api = API_VERSIONS[rid.split("/providers/", 1)[1].rsplit("/", 1)[0]]
                code = _code(functools.partial(resources.get_by_id, rid, api_version=api), "opened")
                if code != "opened":
                    return code
            return "opened"

        def step() -> object:
            results = {reads[0].rsplit("/", 1)[-1]: tunnel([bastion, *reads]) for reads in targets}
            return next(iter(results.values())) if len(set(results.values())) == 1 else results

        out.append((kind, scope_of(grant).rsplit("/", 1)[-1], *world.without(key, step)))
    return out


SCENARIOS: dict[str, tuple[Callable[[World], list[Outcome]], object, object]] = {
    "blob_container_writes": (blob_container_writes, (403, "AuthorizationPermissionMismatch"), (201, "")),
    "blob_container_reads": (
        blob_container_reads,
        ((403, "AuthorizationPermissionMismatch"), (403, "AuthorizationPermissionMismatch")),
        ((200, ""), (403, "AuthorizationPermissionMismatch")),  # reads, and still cannot write
    ),
    "job_credential_mints": (job_credential_mints, ("no token", 0), ("minted", 201)),
    "boot_reads": (boot_reads, "AuthorizationFailed", "read"),
    "group_lists": (group_lists, "AuthorizationFailed", "listed"),
    "secret_reads": (
        secret_reads,
        ("no file", 0, True),  # logged by name, and the prolog ends 0: the job runs
        ("fetched", 0, True, "0o600", 65534 if os.geteuid() == 0 else os.getuid()),
    ),
    "admin_run_commands": (admin_run_commands, "AuthorizationFailed", "ran"),
    "remote_write_lookups": (remote_write_lookups, "AuthorizationFailed", "built"),
    "lustre_hsm_creations": (lustre_hsm_creations, "ResourceDeploymentFailure", "created"),
    "grafana_admin_sign_ins": (grafana_admin_sign_ins, "No Roles Assigned", "Admin"),
    "metrics_publishing": (metrics_publishing, (403, "OperationFailed"), (200, "")),
    "bastion_tunnels": (bastion_tunnels, "AuthorizationFailed", "opened"),
}
# The presets deployed for them: between them they render every kind the scenarios prove.
WORLDS = ("energy", "finance", "manufacturing")


def test_each_scenario_kind_is_rendered_by_a_preset_it_runs_on() -> None:
    found = kinds()
    for kind, removal in REMOVALS.items():
        if removal.proved_by.startswith(HERE):
            assert found[kind] & set(WORLDS), f"{kind}: rendered only by {sorted(found[kind])}, not deployed here"


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize("preset", WORLDS)
def test_each_removal_refuses_the_step_that_needs_it(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, preset: str
) -> None:
    """The preset deployed once and CycleCloud's nodes created; then, for each kind REMOVALS proves here, every
    assignment of that kind the deploy made is removed in turn: its step is refused with the service's own error code,
    and goes through once the assignment is back. An assignment whose removal breaks nothing fails here by name."""
    config = deployed(arm, tmp_path, run_cli, preset, monkeypatch)
    actor = CycleCloud(arm.world, arm.proving.authorization, arm.proving.policy_log)
    assert refused(actor.start(as_identity=scheduler_identity(arm))) == []
    _, compute_subnet = ids(arm, config)
    imds = Imds(arm).start()
    world = World(arm, preset, Zone(load_config(config).config), imds, Origin(compute_subnet, "203.0.113.50", "node"))
    try:
        for name, (scenario, without, with_it) in SCENARIOS.items():
            mine = {k for k, r in REMOVALS.items() if r.proved_by == f"{HERE}{name}"}
            outcomes = scenario(world)
            unneeded = [f"{k} ({label}): {a!r}" for k, label, a, _ in outcomes if a != without]
            assert unneeded == [], f"{name}: removal refused nothing: {unneeded}"
            failing = [f"{k} ({label}): {b!r}" for k, label, _, b in outcomes if b != with_it]
            assert failing == [], f"{name}: the step fails even with the assignment: {failing}"
            # Every assignment of these kinds the preset renders was removed once (none left unexamined).
            assert sorted(str(k) for k, *_ in outcomes) == sorted(str(k) for k, _ in rendered(preset) if k in mine)
    finally:
        imds.stop()


# ----- the table in docs/azure-rules.md -----
DOCS = REPO / "docs" / "azure-rules.md"
DOCS_START = "<!-- role-removals: start (tests/deploy/test_role_removals.py writes it: docs_table) -->"
DOCS_END = "<!-- role-removals: end -->"


def docs_table() -> str:
    """Every rendered kind, who holds it where, the step that needs it and what proves it (or that nothing does)."""
    lines = ["| Role | Holder | Scope | Step that needs it | Removal shown by |", "|---|---|---|---|---|"]
    rows = [(k, r.step, f"`{r.proved_by.replace('tests.deploy.', 'tests/deploy/').replace('::', '.py::', 1)}`")
            for k, r in REMOVALS.items()]  # fmt: skip
    rows += [(k, step, "**open finding: no scenario yet**") for k, step in NO_SCENARIO_YET.items()]
    for kind, step, proof in sorted(rows, key=lambda row: (row[0].principal, row[0].role, row[0].scope)):
        lines.append(f"| {kind.role} | `{kind.principal}` | {kind.scope} | {step} | {proof} |")
    return "\n".join([DOCS_START, *lines, DOCS_END])


def test_the_docs_table_is_the_tables_here() -> None:
    text = DOCS.read_text()
    assert DOCS_START in text and DOCS_END in text
    shown = text[text.index(DOCS_START) : text.index(DOCS_END) + len(DOCS_END)]
    assert shown == docs_table(), "docs/azure-rules.md's role table is stale: paste docs_table() in its place"
