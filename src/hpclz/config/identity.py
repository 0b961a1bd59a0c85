"""Identity: Entra ID groups to cluster roles, managed identities, Key Vault, admin SSH key."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, SecretStr

from hpclz.config.base import Disabled, Guid, ResourceId, StrictModel, policy
from hpclz.config.constraints import AdminUsername, Integer


class BuiltinRole(StrEnum):
    """Azure built-in roles hpclz can assign, by name. IDs live in hpclz.config.roles."""

    OWNER = "Owner"
    CONTRIBUTOR = "Contributor"
    READER = "Reader"
    USER_ACCESS_ADMINISTRATOR = "User Access Administrator"
    VM_ADMIN_LOGIN = "Virtual Machine Administrator Login"
    VM_USER_LOGIN = "Virtual Machine User Login"
    VM_CONTRIBUTOR = "Virtual Machine Contributor"
    MANAGED_IDENTITY_OPERATOR = "Managed Identity Operator"
    STORAGE_ACCOUNT_CONTRIBUTOR = "Storage Account Contributor"
    STORAGE_BLOB_DATA_CONTRIBUTOR = "Storage Blob Data Contributor"
    STORAGE_BLOB_DATA_READER = "Storage Blob Data Reader"
    STORAGE_BLOB_DELEGATOR = "Storage Blob Delegator"
    KEY_VAULT_ADMINISTRATOR = "Key Vault Administrator"
    KEY_VAULT_SECRETS_USER = "Key Vault Secrets User"
    MONITORING_METRICS_PUBLISHER = "Monitoring Metrics Publisher"
    LOG_ANALYTICS_READER = "Log Analytics Reader"
    MONITORING_DATA_READER = "Monitoring Data Reader"
    GRAFANA_ADMIN = "Grafana Admin"


class Area(StrEnum):
    """A design area; each owns one resource group."""

    MANAGEMENT = "management"
    NETWORK = "network"
    COMPUTE = "compute"
    STORAGE = "storage"
    MONITORING = "monitoring"


class ClusterGroups(StrictModel):
    """Entra ID group object IDs per cluster role. Each role maps to least-privilege built-in roles."""

    admins: list[Guid] = Field(
        default_factory=list,
        description="VM Administrator Login + Contributor on compute; Reader on the Bastion host (its tunnels).",
    )
    users: list[Guid] = Field(
        default_factory=list,
        description=(
            "Blob data on storage; Reader on the Bastion host and the compute group (what Bastion's SSH to a login "
            "node needs); no sign-in to the CycleCloud server, whose UI and the portal they reach over a route into "
            "the VNet (network.hub_peering), not through Bastion."
        ),
    )
    readers: list[Guid] = Field(default_factory=list, description="Reader on every landing-zone resource group.")


class ExtraRoleAssignment(StrictModel):
    """A role assignment beyond the defaults, at one area's resource group."""

    principal_id: Guid
    principal_type: Literal["Group", "User", "ServicePrincipal"] = "Group"
    role: BuiltinRole
    area: Area


class ManagedIdentities(StrictModel):
    """User-assigned identities; each gets only the grants its job needs."""

    scheduler: bool = Field(
        default=True,
        description="Identity for the CycleCloud/Slurm server: VM Contributor on the compute resource group.",
    )
    compute: bool = Field(
        default=True,
        description=(
            "Identity for compute nodes: blob data on the data containers, Storage Blob Delegator on their account "
            "(user delegation SAS for jobs), secrets read on Key Vault."
        ),
    )


class NewKeyVault(StrictModel):
    mode: Literal["new"] = "new"
    sku: Literal["standard", "premium"] = "standard"
    soft_delete_retention_days: Integer = Field(default=90, ge=7, le=90)
    purge_protection: bool = Field(default=True, json_schema_extra=policy("not_allowed"))
    secrets: dict[Annotated[str, Field(pattern=r"^[0-9a-zA-Z-]{1,127}$")], SecretStr] = Field(
        default_factory=dict,
        description=(
            "Secrets to store in the vault (e.g. licence-server keys), each written `${env:NAME}`: deploy reads it "
            "from the environment; a value in clear text fails validation (HPCLZ-IDN-010). Values never reach logs, "
            "state or rendered files. Each secret but the accounting password and the portal's client secret is "
            "read by the compute identity and reaches jobs as /run/hpclz/jobs/$SLURM_JOB_ID/secrets/<name>, "
            "fetched by a root prolog (docs/checkpoints.md)."
        ),
    )


def secret_parameter_name(secret: str) -> str:
    """The secureString template parameter that carries a Key Vault secret (`licence-key` -> `secretLicenceKey`).

    ARM compares parameter names and Key Vault compares secret names without case, so two secrets whose
    parameter names differ only in case would collide (HPCLZ-IDN-007)."""
    return "secret" + "".join(part[:1].upper() + part[1:] for part in secret.split("-") if part)


class ExistingKeyVault(StrictModel):
    mode: Literal["existing"] = "existing"
    resource_id: ResourceId


KeyVault = Annotated[NewKeyVault | ExistingKeyVault | Disabled, Field(discriminator="mode")]


ENTRA_ENDPOINT_PATTERN = r"^https://[A-Za-z0-9.-]+/?$"


class CycleCloudEntra(StrictModel):
    """CycleCloud's own Entra ID sign-in, set up as CCWS's installer does it
    (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/install.sh, the authentication.entra.* settings). The app
    registration lives in Entra ID, outside ARM, so its IDs come from the user (docs/entra-login.md); neither is a
    secret: the app has no client secret, and CycleCloud's CLI signs in with the server VM's managed identity."""

    client_id: Guid = Field(description="Application (client) ID of CycleCloud's app registration.")
    tenant_id: Guid = Field(description="Directory (tenant) ID the app registration lives in.")
    endpoint: str = Field(
        default="https://login.microsoftonline.com",
        pattern=ENTRA_ENDPOINT_PATTERN,
        description="Entra ID sign-in endpoint with its protocol (authentication.entra.endpoint); sovereign clouds differ.",
    )


class Identity(StrictModel):
    groups: ClusterGroups = Field(default_factory=ClusterGroups)
    extra_role_assignments: list[ExtraRoleAssignment] = Field(default_factory=list)
    managed_identities: ManagedIdentities = Field(default_factory=ManagedIdentities)
    key_vault: KeyVault = Field(default_factory=NewKeyVault)
    entra_login: bool = Field(
        default=True,
        description=(
            "Microsoft Entra ID SSH login on the CycleCloud server (the AADSSHLoginForLinux extension) for "
            "identity.groups, through the VM login roles; off, no VM login role is granted. CycleCloud's nodes "
            "(scheduler, login, partitions) are reached through CycleCloud's own user management."
        ),
        json_schema_extra=policy("in_place"),
    )
    cyclecloud_entra: CycleCloudEntra | None = Field(
        default=None,
        description=(
            "CycleCloud signs its users in with Entra ID through this app registration; its built-in user management "
            "then creates a local account on every cluster node for each user holding the app's Global.Node.User or "
            "Global.Node.Admin role (docs/entra-login.md). Unset, CycleCloud keeps its built-in password sign-in. "
            "Read once, at the server's first boot."
        ),
        json_schema_extra=policy("replace"),
    )
    admin_username: AdminUsername = Field(
        default="hpcadmin", pattern=r"^[a-z_][a-z0-9_-]{0,31}$", json_schema_extra=policy("replace")
    )
    ssh_public_key: str = Field(
        min_length=16,
        description="OpenSSH public key for the admin user. Passwords are never used.",
        json_schema_extra=policy("restart_nodes"),
    )
