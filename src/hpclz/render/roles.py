"""Role assignments per resource group, each at the narrowest scope its job needs.

Built-in role definition IDs are the same in every tenant
(learn.microsoft.com/azure/role-based-access-control/built-in-roles). Assignment names are ARM
`guid()` over scope, principal and role, so a redeploy finds the same assignment instead of a duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hpclz.config.identity import BuiltinRole
from hpclz.render.arm import API_VERSIONS, expr, literal, resource_id, resource_id_expr, resource_path, role_definition
from hpclz.render.zone import LOCKER_IDENTITY, Zone

# CycleCloud's locker container (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/files-to-load/cyclecloud_install.py).
LOCKER_CONTAINER = "cyclecloud"
# Beside it in the locker account: the hpclz wheel `hpclz deploy` uploads for the scheduler (hpclz.deploy.wheel).
WHEEL_CONTAINER = "hpclz"

ROLE_IDS: dict[BuiltinRole, str] = {
    BuiltinRole.OWNER: "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
    BuiltinRole.CONTRIBUTOR: "b24988ac-6180-42a0-ab88-20f7382dd24c",
    BuiltinRole.READER: "acdd72a7-3385-48ef-bd42-f606fba81ae7",
    BuiltinRole.USER_ACCESS_ADMINISTRATOR: "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
    BuiltinRole.VM_ADMIN_LOGIN: "1c0163c0-47e6-4577-8991-ea5c82e286e4",
    BuiltinRole.VM_USER_LOGIN: "fb879df8-f326-4884-b1cf-06f3ad86be52",
    BuiltinRole.VM_CONTRIBUTOR: "9980e02c-c2be-4d73-94e8-173b1dc7cf3c",
    BuiltinRole.MANAGED_IDENTITY_OPERATOR: "f1a07417-d97a-45cb-824c-7a7467783830",
    BuiltinRole.STORAGE_ACCOUNT_CONTRIBUTOR: "17d1049b-9a84-46fb-8f53-869881c3d3ab",
    BuiltinRole.STORAGE_BLOB_DATA_CONTRIBUTOR: "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    BuiltinRole.STORAGE_BLOB_DATA_READER: "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    # MicrosoftDocs/azure-docs@1b4e136a1da731e1ed16444eb6ce5701bcd8c0f4:articles/role-based-access-control/built-in-roles/
    # storage.md, "Storage Blob Delegator".
    BuiltinRole.STORAGE_BLOB_DELEGATOR: "db58b8e5-c6ad-4a2a-8342-4190687cbf4a",
    BuiltinRole.KEY_VAULT_ADMINISTRATOR: "00482a5a-887f-4fb3-b363-3b7fe8e74483",
    BuiltinRole.KEY_VAULT_SECRETS_USER: "4633458b-17de-408a-b874-0445c86b69e6",
    BuiltinRole.MONITORING_METRICS_PUBLISHER: "3913510d-42f4-4e42-8a64-420c390055eb",
    BuiltinRole.LOG_ANALYTICS_READER: "73c42c96-874c-492b-b04d-ab87d138a893",
    # As CCWS's monitoring assigns them (Azure/cyclecloud-monitoring@3da922e:infra/managedMonitoring.bicep).
    BuiltinRole.MONITORING_DATA_READER: "b0d8363b-8ddd-447d-831f-62ca05bff136",
    BuiltinRole.GRAFANA_ADMIN: "22926164-76b3-42b3-bc55-97df8dab3e41",
}


@dataclass(frozen=True)
class Assignment:
    """One rendered role assignment: name and principal are ARM expressions or literals."""

    name: str
    role_definition_id: str
    principal_id: str
    principal_type: str
    path: str
    description: str
    scope: str | None = None  # relative resource scope for assignments narrower than the group
    depends_on: list[str] = field(default_factory=list)


def _assignment(
    role: BuiltinRole,
    principal: str,
    principal_type: str,
    path: str,
    *,
    source: str | None = None,
    on: tuple[str, ...] = (),
    identity_key: str | None = None,
    after: tuple[str, ...] = (),
) -> Assignment:
    """`path`: the config item it comes from, list index included (the template's `comments`). `source`:
    what the ARM description names instead, without a list position, so reordering a list rewrites nothing
    in Azure: the list and the principal (`identity.groups.readers -> <group>`); `path` where that is unique.
    `on`: (type, *names) of the one resource of this group the assignment is narrowed to, which it then
    waits for, as it waits for `after`."""
    role_id = ROLE_IDS[role]
    key = identity_key or literal(principal)
    scope_id = resource_id(*on) if on else "resourceGroup().id"
    return Assignment(
        name=expr(f"guid({scope_id}, {key}, {literal(role_id)})"),
        role_definition_id=expr(role_definition(role_id)),
        principal_id=principal,
        principal_type=principal_type,
        path=path,
        description=f"hpclz: {role.value} for {source or path}",
        scope=resource_path(*on) if on else None,
        depends_on=[*([expr(scope_id)] if on else []), *after],
    )


def _groups(zone: Zone, attr: str, roles: list[BuiltinRole], on: tuple[str, ...] = ()) -> list[Assignment]:
    out = []
    for index, group in enumerate(getattr(zone.config.identity.groups, attr)):
        for role in roles:
            path, source = f"identity.groups.{attr}[{index}]", f"identity.groups.{attr} -> {group}"
            out.append(_assignment(role, group, "Group", path, source=source, on=on))
    return out


def identity_path(role_name: str) -> str:
    """The config item an identity comes from: the locker identity exists because the CycleCloud server does."""
    return "compute.cyclecloud" if role_name == LOCKER_IDENTITY else f"identity.managed_identities.{role_name}"


def _identity(
    zone: Zone, role_name: str, role: BuiltinRole, on: tuple[str, ...] = (), after: tuple[str, ...] = ()
) -> Assignment:
    return _assignment(
        role,
        zone.identity_principal(role_name),
        "ServicePrincipal",
        identity_path(role_name),
        identity_key=zone.identity_id(role_name),
        on=on,
        after=after,
    )


def assignments(zone: Zone, area: str) -> list[Assignment]:
    """Every role assignment that lands in the resource group of `area`."""
    identity = zone.config.identity
    out = _groups(zone, "readers", [BuiltinRole.READER])
    out += bastion_readers(zone, area)
    if area == "compute":
        # The VM login roles mean something only with Entra ID SSH login (identity.entra_login, HPCLZ-IDN-008).
        login = identity.entra_login
        out += _groups(zone, "admins", [*([BuiltinRole.VM_ADMIN_LOGIN] if login else []), BuiltinRole.CONTRIBUTOR])
        # Users get no VM login role: the only VM hpclz puts in this group is the CycleCloud server, and whoever signs
        # in there can take its identities' tokens (learn.microsoft.com/entra/identity/managed-identities-azure-
        # resources/how-to-use-vm-token), among them CycleCloud's Virtual Machine Contributor on this group: run
        # command as root on every VM (Microsoft.Compute/virtualMachines/*, built-in-roles). Users reach the
        # cluster's login nodes through CycleCloud's user management (identity.entra_login); HPCLZ-IDN-011.
        if identity.managed_identities.scheduler:
            # CycleCloud creates and deletes the node scale sets: VM Contributor on this group only.
            out.append(_identity(zone, "scheduler", BuiltinRole.VM_CONTRIBUTOR))
    if area == "storage" and zone.blob_new:
        out += _data_containers(zone)
        out += _delegation_key(zone)
        out += lustre_hsm_assignments(zone)
    if area == "storage":
        out += locker_assignments(zone)
        # Nodes look up the Lustre MGS and NetApp mount addresses at boot; Reader on those resources only. Login
        # nodes do it with the locker identity, as they carry no other (no data role where users log in).
        for mounted in _mounted(zone):
            if identity.managed_identities.compute:
                out.append(_identity(zone, "compute", BuiltinRole.READER, on=mounted))
            out.append(_identity(zone, LOCKER_IDENTITY, BuiltinRole.READER, on=mounted))
    if area == "management" and identity.managed_identities.scheduler:
        out += [_cyclecloud_assigns_node_identity(zone, who) for who in node_identities(zone)]
    if area == "management" and zone.key_vault_new:
        out += _secret_readers(zone)
    if area == "management" and zone.prometheus is not None and identity.managed_identities.compute:
        # The nodes read their own identity's client ID, which Prometheus signs its remote writes in with
        # (templates/cloud-init/prometheus_url.py): the compute identity's on the scheduler and the partitions, the
        # locker identity's on the login nodes.
        for who in ("compute", LOCKER_IDENTITY):
            own = ("Microsoft.ManagedIdentity/userAssignedIdentities", zone.identity_name(who))
            out.append(_identity(zone, who, BuiltinRole.READER, on=own))
    for index, extra in enumerate(identity.extra_role_assignments):
        if extra.area.value == area:
            out.append(
                _assignment(
                    extra.role,
                    extra.principal_id,
                    extra.principal_type,
                    f"identity.extra_role_assignments[{index}]",
                    source=f"identity.extra_role_assignments -> {extra.principal_id}",
                )
            )
    return out


def has_bastion(zone: Zone) -> bool:
    """Whether the network template renders the Bastion host (templates/arm/network/main.json.j2)."""
    return zone.config.network.bastion.enabled and zone.has_subnet("bastion")


def bastion_readers(zone: Zone, area: str) -> list[Assignment]:
    """What the users and admins groups need to open `az network bastion tunnel` / `ssh` to the CycleCloud server, the
    portal and the login nodes. Azure Bastion's "Required roles" (learn.microsoft.com/azure/bastion/
    bastion-connect-vm-ssh-linux, connect-vm-native-client-linux and the Bastion FAQ): Reader on the VM, Reader on the
    NIC with its private IP, Reader on the Bastion resource, and Reader on the target's VNet only when Bastion sits in
    a peered VNet (hpclz's Bastion is in the zone's own VNet: templates/arm/network/main.json.j2). The CLI reads the
    Bastion host first (Show, Azure/azure-cli-extensions@00f32d8:src/bastion/azext_bastion/custom.py
    create_bastion_tunnel and ssh_bastion_host, lines 138-147), then hands the user's token to the Bastion service.

    - On the Bastion host: Reader for users and admins (admins hold nothing in the network group otherwise).
    - On the compute group: Reader for users. The CycleCloud server, the portal VM and their NICs are there, and so
      are the login nodes, which CycleCloud creates after deploy as a scale set with its NICs: a scope is a management
      group, subscription, resource group or resource (learn.microsoft.com/azure/role-based-access-control/
      scope-overview), so a resource made after deploy is covered only through a scope above it, here its group. Reader holds no action beyond */read (built-in-roles/general), so no
      run command, sign-in, identity attach, key listing or secret read (HPCLZ-IDN-011, IDN-012). Admins hold
      Contributor there already; a users group also named in readers has this very assignment (same name) already."""
    if not has_bastion(zone):
        return []
    if area == "network":
        bastion = ("Microsoft.Network/bastionHosts", zone.names.name("bastion"))
        return [
            *_groups(zone, "users", [BuiltinRole.READER], on=bastion),
            *_groups(zone, "admins", [BuiltinRole.READER], on=bastion),
        ]
    if area == "compute":
        readers = {g.lower() for g in zone.config.identity.groups.readers}
        return [a for a in _groups(zone, "users", [BuiltinRole.READER]) if a.principal_id.lower() not in readers]
    return []


def entra_login(zone: Zone) -> bool:
    """Whether the CycleCloud server gets the Entra ID SSH extension: asked for, and someone to sign in."""
    return zone.config.identity.entra_login and bool(zone.config.identity.groups.admins)


def node_identities(zone: Zone) -> list[str]:
    """The identities CycleCloud attaches to the nodes it creates: the locker identity on every node, the compute
    identity (data roles) on the scheduler and the partitions only."""
    return [LOCKER_IDENTITY, *(["compute"] if zone.config.identity.managed_identities.compute else [])]


def _cyclecloud_assigns_node_identity(zone: Zone, who: str) -> Assignment:
    """CycleCloud attaches the nodes' identities to the scale sets it creates, which needs
    Microsoft.ManagedIdentity/userAssignedIdentities/*/assign/action on each (the "CycleCloud Orchestrator
    Role", learn.microsoft.com/azure/cyclecloud/how-to/managed-identities): Managed Identity Operator on it only."""
    type_ = "Microsoft.ManagedIdentity/userAssignedIdentities"
    return _identity(
        zone,
        "scheduler",
        BuiltinRole.MANAGED_IDENTITY_OPERATOR,
        on=(type_, zone.identity_name(who)),
        after=(resource_id_expr(type_, zone.identity_name("scheduler")),),
    )


def locker_assignments(zone: Zone) -> list[Assignment]:
    """Who holds what on the locker account. Only CycleCloud's identity writes it (CycleCloud uploads the Slurm
    project there: Storage Blob Data Contributor, as CCWS grants its server, ccws-facts from
    Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/ccw.bicep); the locker identity on the nodes reads it (Storage
    Blob Data Reader on the account, as CCWS's miRoleAssignments.bicep grants ccwLockerManagedIdentity); the admins
    may write the wheel container only, which `hpclz deploy` fills and whose blob each node checks by SHA-256
    before using it. Users and the compute identity get nothing here."""
    account = ("Microsoft.Storage/storageAccounts", zone.locker_account_name)
    wheels = ("Microsoft.Storage/storageAccounts/blobServices/containers", zone.locker_account_name, "default")
    out = []
    if zone.config.identity.managed_identities.scheduler:
        out.append(_identity(zone, "scheduler", BuiltinRole.STORAGE_BLOB_DATA_CONTRIBUTOR, on=account))
    out.append(_identity(zone, LOCKER_IDENTITY, BuiltinRole.STORAGE_BLOB_DATA_READER, on=account))
    out += _groups(zone, "admins", [BuiltinRole.STORAGE_BLOB_DATA_CONTRIBUTOR], on=(*wheels, WHEEL_CONTAINER))
    return out


def cyclecloud_network_assignments(zone: Zone) -> list[Assignment]:
    """CycleCloud puts node NICs in the landing zone's subnets: Microsoft.Network/virtualNetworks/subnets/join/action
    and VNet reads (Orchestrator Role, learn.microsoft.com/azure/cyclecloud/how-to/managed-identities). Virtual
    Machine Contributor holds both; scoped to the VNet, it grants nothing else there. Deployed into the network
    group from the compute deployment, after the scheduler identity exists."""
    if not zone.config.identity.managed_identities.scheduler or zone.existing_vnet is not None:
        return []
    vnet = ("Microsoft.Network/virtualNetworks", zone.vnet_name)
    return [_identity(zone, "scheduler", BuiltinRole.VM_CONTRIBUTOR, on=vnet)]


def cyclecloud_subscription_assignments(zone: Zone) -> list[Assignment]:
    """CycleCloud lists VM sizes, quotas (Microsoft.Compute/skus/read, locations/usages/read) and prices at
    subscription scope; without them it never fills Azure.MachineType (Azure/cyclecloud-slurm-workspace#345).
    Reader on the subscription is the built-in that holds these reads and no write."""
    if not zone.config.identity.managed_identities.scheduler:
        return []
    role_id = ROLE_IDS[BuiltinRole.READER]
    key = zone.identity_id("scheduler")
    return [
        Assignment(
            name=expr(f"guid(subscription().id, {key}, {literal(role_id)})"),
            role_definition_id=expr(role_definition(role_id)),
            principal_id=zone.identity_principal("scheduler"),
            principal_type="ServicePrincipal",
            path="identity.managed_identities.scheduler",
            description="hpclz: Reader for identity.managed_identities.scheduler (CycleCloud SKU and quota reads)",
        )
    ]


def _data_containers(zone: Zone) -> list[Assignment]:
    """Users and the nodes' identity reach the data containers only, each scoped on its own (Azure RBAC scopes
    blob data roles down to a container: learn.microsoft.com/azure/storage/blobs/assign-azure-role-data-access).
    Every job reaches the containers through a SAS signed with a user delegation key the compute identity asked for
    (hpclz.render.job_storage), and what a user delegation SAS allows never exceeds that identity's role
    (learn.microsoft.com/rest/api/storageservices/create-user-delegation-sas), so what it may write, any job may
    overwrite: a `datasets` container is input, read by jobs and written by its users with their own Entra ID tokens,
    and the compute identity only reads it (Storage Blob Data Reader). Checkpoints and
    general containers stay writable; versioning, soft delete and sealed versions keep what a job overwrites.
    The CycleCloud locker is not here: it has an account of its own (locker_assignments)."""
    blob = zone.blob_new
    if blob is None:
        return []
    type_ = "Microsoft.Storage/storageAccounts/blobServices/containers"
    account = zone.storage_account_name
    out: list[Assignment] = []
    for container in blob.containers:
        on = (type_, account, "default", container.name)
        out += _groups(zone, "users", [BuiltinRole.STORAGE_BLOB_DATA_CONTRIBUTOR], on=on)
        if zone.config.identity.managed_identities.compute:
            reads_only = container.purpose == "datasets"
            role = BuiltinRole.STORAGE_BLOB_DATA_READER if reads_only else BuiltinRole.STORAGE_BLOB_DATA_CONTRIBUTOR
            out.append(_identity(zone, "compute", role, on=on))
    return out


def _delegation_key(zone: Zone) -> list[Assignment]:
    """Storage Blob Delegator on the data account for the compute identity, where it holds a blob data role on one of
    its containers: a job's per-container user delegation SAS is signed with a key from Get User Delegation Key, whose
    `Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action` must be "scoped at the level of
    the storage account, the resource group, or the subscription" (learn.microsoft.com/rest/api/storageservices/
    create-user-delegation-sas, "Assign permissions with RBAC"), and the identity's data roles sit on containers only.

    It widens nothing the identity may do to data: the role holds that one action and no data action (MicrosoftDocs/
    azure-docs@1b4e136:articles/role-based-access-control/built-in-roles/storage.md, "Storage Blob Delegator"), and a
    SAS signed with the key grants "the intersection of the permissions that were granted to the security principal
    that requested the user delegation key and the permissions that were granted to the resource on the SAS token"
    (create-user-delegation-sas, "Authorize a user delegation SAS"): still only its own containers, reads only on
    datasets."""
    if not jobs_use_compute_identity(zone):
        return []
    account = ("Microsoft.Storage/storageAccounts", zone.storage_account_name)
    return [_identity(zone, "compute", BuiltinRole.STORAGE_BLOB_DELEGATOR, on=account)]


def jobs_use_compute_identity(zone: Zone) -> bool:
    """Whether jobs get blob containers: the compute identity holds a blob data role on a data container
    (_data_containers), and each job gets a SAS per container signed with that identity's user delegation key
    (hpclz.render.job_storage, docs/checkpoints.md)."""
    principal = zone.identity_principal("compute") if zone.config.identity.managed_identities.compute else None
    return principal is not None and any(a.principal_id == principal for a in _data_containers(zone))


def lustre_hsm_assignments(zone: Zone) -> list[Assignment]:
    """The roles Managed Lustre's resource provider needs on the HSM account before the file system is created:
    without them creation fails, and validation does not catch it
    (MicrosoftDocs/azure-stack-docs@f1e86c5:azure-managed-lustre/amlfs-prerequisites.md)."""
    lustre = zone.lustre_new
    if lustre is None or lustre.hsm is None or lustre.hsm.resource_provider_object_id is None:
        return []
    principal = lustre.hsm.resource_provider_object_id
    account = ("Microsoft.Storage/storageAccounts", zone.storage_account_name)
    return [
        _assignment(role, principal, "ServicePrincipal", "storage.lustre.hsm.resource_provider_object_id", on=account)
        for role in (BuiltinRole.STORAGE_ACCOUNT_CONTRIBUTOR, BuiltinRole.STORAGE_BLOB_DATA_CONTRIBUTOR)
    ]


def _mounted(zone: Zone) -> list[tuple[str, ...]]:
    """(type, *names) of each file system hpclz creates and the nodes mount."""
    out: list[tuple[str, ...]] = []
    if zone.lustre_new:
        out.append(("Microsoft.StorageCache/amlFilesystems", zone.lustre_name))
    if zone.netapp_new:
        for volume in zone.netapp_new.volumes:
            volume_type = "Microsoft.NetApp/netAppAccounts/capacityPools/volumes"
            out.append((volume_type, zone.netapp_account, zone.netapp_pool, zone.netapp_volume(volume)))
    return out


def job_secrets(zone: Zone) -> list[str]:
    """The secrets the compute identity reads, by name: every secret of a new vault but the accounting password and
    the portal's OIDC client secret (the portal VM's own identity reads that one: portal_vault_reader). Jobs get them
    from the prolog, which fetches them as root with that identity (hpclz.render.job_storage)."""
    kv = zone.key_vault_new
    if kv is None or not zone.config.identity.managed_identities.compute:
        return []
    others = {accounting_secret(zone), portal_secret(zone)}
    return [n for n in sorted(kv.secrets) if n not in others]


def _secret_readers(zone: Zone) -> list[Assignment]:
    """Key Vault Secrets User on single secrets, never on the vault: every job runs where the compute identity is
    attached, so a vault-wide grant would hand every job the Slurm database password (Key Vault RBAC assigns roles
    at the scope of one secret: learn.microsoft.com/azure/key-vault/general/rbac-guide, "Best Practices for
    individual keys, secrets, and certificates role assignments"). The compute identity reads the config's secrets
    meant for jobs; the CycleCloud server (scheduler identity) reads the accounting password when it imports the
    cluster, and nothing else; the portal's client secret is the portal VM's alone."""
    kv = zone.key_vault_new
    if kv is None:
        return []
    accounting = accounting_secret(zone)
    out = []
    for who, secrets in (
        ("compute", job_secrets(zone)),
        (
            "scheduler",
            [accounting] if accounting and _reads_accounting_secret(zone) and accounting in kv.secrets else [],
        ),
    ):
        identity = resource_id_expr("Microsoft.ManagedIdentity/userAssignedIdentities", zone.identity_name(who))
        for secret in secrets:
            on = ("Microsoft.KeyVault/vaults/secrets", zone.key_vault_name, secret)
            out.append(_identity(zone, who, BuiltinRole.KEY_VAULT_SECRETS_USER, on=on, after=(identity,)))
    return out


def accounting_secret(zone: Zone) -> str | None:
    accounting = zone.config.compute.accounting
    name = getattr(accounting, "password_secret_name", None) if accounting.mode != "disabled" else None
    return str(name) if name else None


def _reads_accounting_secret(zone: Zone) -> bool:
    return zone.config.compute.accounting.mode != "disabled" and zone.config.identity.managed_identities.scheduler


def prometheus_assignments(zone: Zone, ids: dict[str, tuple[str, ...]]) -> list[Assignment]:
    """Managed Prometheus, as CCWS's monitoring grants it (Azure/cyclecloud-monitoring@3da922e:
    infra/managedMonitoring.bicep; Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/miMonitoringRoleAssignments.bicep):
    the nodes' identity publishes metrics to the data collection rule (and reads it and its endpoint, to build the
    remote-write URL at boot); Grafana's own identity reads the workspace; cluster admins administer Grafana.
    `ids`: (type, name) of the workspace, endpoint, rule and Grafana."""
    prom = zone.prometheus
    if prom is None:
        return []
    out: list[Assignment] = []
    if zone.config.identity.managed_identities.compute:
        # The login nodes publish with the locker identity, the only one they carry (CCWS grants its locker identity
        # the same role: Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/miMonitoringRoleAssignments.bicep).
        for who in ("compute", LOCKER_IDENTITY):
            out.append(_identity(zone, who, BuiltinRole.MONITORING_METRICS_PUBLISHER, on=ids["rule"]))
            out.append(_identity(zone, who, BuiltinRole.READER, on=ids["rule"]))
            out.append(_identity(zone, who, BuiltinRole.READER, on=ids["endpoint"]))
    if prom.grafana:
        grafana = resource_id(*ids["grafana"])
        api = API_VERSIONS["Microsoft.Dashboard/grafana"]
        role_id = ROLE_IDS[BuiltinRole.MONITORING_DATA_READER]
        workspace = resource_id(*ids["workspace"])
        out.append(
            Assignment(
                name=expr(f"guid({workspace}, {grafana}, {literal(role_id)})"),
                role_definition_id=expr(role_definition(role_id)),
                principal_id=expr(f"reference({grafana}, {literal(api)}, 'full').identity.principalId"),
                principal_type="ServicePrincipal",
                path="monitoring.prometheus.grafana",
                description="hpclz: Monitoring Data Reader for monitoring.prometheus.grafana (Grafana reads the workspace)",
                scope=resource_path(*ids["workspace"]),
                depends_on=[expr(workspace), expr(grafana)],
            )
        )
        out += _groups(zone, "admins", [BuiltinRole.GRAFANA_ADMIN], on=ids["grafana"])
    return out


def portal_secret(zone: Zone) -> str | None:
    """The Key Vault secret the portal VM reads at boot (its OIDC client secret), when the portal is on and has one."""
    oidc = zone.config.portal.oidc if zone.config.portal.enabled else None
    return oidc.client_secret_name if oidc is not None and oidc.client_secret_name else None


def portal_vault_reader(zone: Zone, vm_name: str) -> dict[str, Any] | None:
    """Key Vault Secrets User on the one secret the portal reads (its OIDC client secret) for the portal VM's own
    identity, never on the vault: whoever signs in to the portal VM can take its identity's token
    (learn.microsoft.com/entra/identity/managed-identities-azure-resources/how-to-use-vm-token), and a vault-wide grant
    would hand them the Slurm database password too. Key Vault RBAC assigns roles at the scope of one secret
    (learn.microsoft.com/azure/key-vault/general/rbac-guide, "Best Practices for individual keys, secrets, and
    certificates role assignments"), as hpclz.render.roles grants the nodes theirs."""
    name = portal_secret(zone)
    if name is None or zone.key_vault_new is None:
        return None
    vm = resource_id("Microsoft.Compute/virtualMachines", vm_name)
    secret = resource_id("Microsoft.KeyVault/vaults/secrets", zone.key_vault_name, name, group=zone.rg["management"])
    role = ROLE_IDS[BuiltinRole.KEY_VAULT_SECRETS_USER]
    api = API_VERSIONS["Microsoft.Compute/virtualMachines"]
    return {
        "deployment": f"{vm_name}-vault-reader",
        "group": zone.rg["management"],
        "name": expr(f"guid({secret}, {vm}, {literal(role)})"),
        "scope": f"Microsoft.KeyVault/vaults/{zone.key_vault_name}/secrets/{name}",
        "role_definition_id": expr(role_definition(role)),
        "principal_id": expr(f"reference({vm}, {literal(api)}, 'Full').identity.principalId"),
        "description": "hpclz: Key Vault Secrets User for portal.oidc.client_secret_name",
    }
