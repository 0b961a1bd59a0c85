"""Storage: Managed Lustre, NetApp Files, Blob for checkpoints and datasets, scratch, shared home."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, SecretStr

from hpclz.config.base import ContainerName, Disabled, Guid, ResourceId, StrictModel, policy
from hpclz.config.constraints import Integer, SafeMountPath, unique_by
from hpclz.config.zones import AvailabilityZone

MountPoint = Annotated[SafeMountPath, Field(pattern=r"^/[A-Za-z0-9_./-]*$")]


class LustreHsm(StrictModel):
    """Link the file system to a blob container (hierarchical storage management)."""

    container: ContainerName
    import_prefix: str = "/"
    resource_provider_object_id: Guid | None = Field(
        default=None,
        description="Object ID of the tenant's 'HPC Cache Resource Provider' service principal, which needs "
        "Storage Account Contributor and Storage Blob Data Contributor on the HSM account before Lustre exists.",
    )


class NewLustre(StrictModel):
    mode: Literal["new"] = "new"
    sku: Literal[
        "AMLFS-Durable-Premium-40",
        "AMLFS-Durable-Premium-125",
        "AMLFS-Durable-Premium-250",
        "AMLFS-Durable-Premium-500",
    ] = Field(default="AMLFS-Durable-Premium-250", json_schema_extra=policy("replace_data"))
    capacity_tib: Integer = Field(
        ge=4,
        description="Size in TiB. Smaller later: a new file system (data lost). Larger later: not allowed; Azure "
        "grows it in place with an expansion job (az amlfs expansion create), which hpclz does not create.",
        json_schema_extra=policy("replace_data"),
    )
    mount_point: MountPoint = "/lustre"
    # AMLFS is zonal and its zone is fixed at creation (Microsoft.StorageCache amlFilesystems `zones`).
    zone: AvailabilityZone = Field(default="1", json_schema_extra=policy("replace_data"))
    hsm: LustreHsm | None = None
    maintenance_day: Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"] = "Sunday"
    maintenance_time_utc: str = Field(default="02:00", pattern=r"^([01]\d|2[0-3]):[0-5]\d$")


class ExistingLustre(StrictModel):
    mode: Literal["existing"] = "existing"
    resource_id: ResourceId
    mgs_address: str
    mount_point: MountPoint = "/lustre"


class NetAppVolume(StrictModel):
    name: str = Field(pattern=r"^[a-zA-Z][a-zA-Z0-9-]{0,39}$")
    quota_gib: Integer = Field(ge=50, json_schema_extra=policy("in_place"))
    # Converted in place, once every node has unmounted it (hpclz.plan.policies NFS_CONVERSION cites Azure).
    protocol: Literal["NFSv3", "NFSv4.1"] = Field(default="NFSv4.1", json_schema_extra=policy("restart_nodes"))
    mount_point: MountPoint
    # ANF sets a new volume's root to 0770 owned by root unless told otherwise, which denies every user's job; the
    # mode can be set at creation or changed later ("The Unix permissions setting is set to 0770 by default ... You
    # can specify these settings during volume creation or after volume creation", MicrosoftDocs/azure-docs
    # articles/azure-netapp-files/configure-unix-permissions-change-ownership-mode.md). Octal 4 digit format
    # (Microsoft.NetApp 2024-07-01 VolumeProperties.unixPermissions).
    unix_permissions: str = Field(
        default="0755",
        pattern=r"^[0-7]{4}$",
        description=(
            "Mode of the volume's root directory when hpclz creates it (octal, 4 digits). 0755 lets every user "
            "read and traverse it; 1777 (sticky, as /tmp) lets every user write their own files there."
        ),
        json_schema_extra=policy("in_place"),
    )


NetAppVolumes = Annotated[list[NetAppVolume], AfterValidator(unique_by("name", "NetApp volume"))]


class NewNetApp(StrictModel):
    mode: Literal["new"] = "new"
    service_level: Literal["Standard", "Premium", "Ultra"] = Field(
        default="Premium", json_schema_extra=policy("in_place")
    )
    pool_size_tib: Integer = Field(ge=1, json_schema_extra=policy("in_place"))
    volumes: NetAppVolumes = Field(min_length=1)


class ExistingNetApp(StrictModel):
    mode: Literal["existing"] = "existing"
    account_resource_id: ResourceId
    volumes: NetAppVolumes = Field(min_length=1)


class BlobContainer(StrictModel):
    name: ContainerName
    purpose: Literal["checkpoints", "datasets", "general"] = Field(
        default="general",
        description=(
            "datasets: input that jobs read; the compute identity gets read-only access (users write it with their "
            "own sign-in). checkpoints and general: the compute identity may write."
        ),
    )
    versioning: bool = Field(default=True, description="Blob versioning protects checkpoints from overwrite.")
    immutable: bool = Field(
        default=False,
        description=(
            "Version-level immutability (WORM) support on this container: blob versions under a time-based "
            "retention policy can be neither overwritten nor deleted until it expires. Set only when the "
            "container is created; needs versioning."
        ),
        json_schema_extra=policy("not_allowed"),
    )
    retention_days: Integer | None = Field(
        default=None,
        ge=1,
        le=146000,
        description=(
            "Time-based retention `hpclz checkpoints manifest` sets on each blob version it seals and on the "
            "manifest (needs immutable: true). Applies to versions sealed from then on; earlier ones keep theirs."
        ),
        json_schema_extra=policy("in_place"),
    )
    retention_locked: bool = Field(
        default=False,
        description=(
            "Seal with locked policies: irreversible. A locked expiry can be extended but never shortened or "
            "removed, so the versions and the container cannot be deleted until it passes."
        ),
        json_schema_extra=policy("in_place"),
    )
    manifest_key: SecretStr | None = Field(
        default=None,
        description=(
            "`${env:NAME}`: the HMAC-SHA256 key that signs the manifest `hpclz checkpoints manifest` writes, "
            "so `hpclz checkpoints verify` detects a manifest edited to match tampered checkpoints."
        ),
        json_schema_extra=policy("in_place"),
    )


BlobContainers = Annotated[list[BlobContainer], AfterValidator(unique_by("name", "blob container"))]


class Lifecycle(StrictModel):
    """Move blobs to cheaper tiers as they age; empty means keep them hot."""

    # In tier order: HPCLZ-COST-004 compares each step with the one declared before it.
    cool_after_days: Integer | None = Field(default=30, ge=1)
    cold_after_days: Integer | None = Field(default=None, ge=1)
    archive_after_days: Integer | None = Field(default=None, ge=1)
    delete_after_days: Integer | None = Field(default=None, ge=1)


class NewBlob(StrictModel):
    mode: Literal["new"] = "new"
    replication: Literal["LRS", "ZRS", "GRS", "GZRS"] = Field(default="ZRS", json_schema_extra=policy("replace_data"))
    containers: BlobContainers = Field(min_length=1)
    soft_delete_days: Integer = Field(default=14, ge=1, le=365)
    point_in_time_restore_days: Integer | None = Field(
        default=None,
        ge=1,
        le=364,
        description=(
            "Point-in-time restore: put the account's block blobs back as they were at any moment in the last N "
            "days (turns on the change feed). Needs versioning and fewer days than soft_delete_days."
        ),
        json_schema_extra=policy("in_place"),
    )
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    private_endpoint: bool = True
    allow_public_access: bool = False
    min_tls_version: Literal["TLS1_2", "TLS1_3"] = "TLS1_2"


class ExistingBlob(StrictModel):
    mode: Literal["existing"] = "existing"
    resource_id: ResourceId
    containers: BlobContainers = Field(min_length=1)


class AzureFilesShared(StrictModel):
    """Shared home and scheduler state on Azure Files NFS 4.1 shares of a premium (FileStorage) account.

    NFS shares exist only on premium FileStorage accounts, in LRS or ZRS
    (https://learn.microsoft.com/en-us/azure/storage/files/files-nfs-protocol#support-for-azure-storage-features).
    """

    mode: Literal["azure_files"] = "azure_files"
    replication: Literal["LRS", "ZRS"] = Field(default="ZRS", json_schema_extra=policy("replace_data"))
    home_gib: int = Field(default=1024, ge=1, le=102400, json_schema_extra=policy("in_place"))
    sched_gib: int = Field(default=100, ge=1, le=102400, json_schema_extra=policy("in_place"))
    mount_point: MountPoint = Field(
        default="/shared",
        description="Where home directories live (CycleCloud keeps users' homes in <mount_point>/home).",
        json_schema_extra=policy("restart_nodes"),
    )


class NetAppShared(StrictModel):
    """Shared home and scheduler state on two Azure NetApp Files volumes in storage.netapp's capacity pool (which
    must be `new`), as CCWS offers ANF for its shared file system (Azure/cyclecloud-slurm-workspace@bc0fc1b:
    bicep/anf.bicep: NFSv3, unix security, an export policy rule with root access). Volumes start at 50 GiB
    (learn.microsoft.com/azure/azure-netapp-files/azure-netapp-files-resource-limits); their quotas count against
    the pool (HPCLZ-STO-003)."""

    mode: Literal["netapp"] = "netapp"
    home_gib: Integer = Field(default=1024, ge=50, le=102400, json_schema_extra=policy("in_place"))
    sched_gib: Integer = Field(default=100, ge=50, le=102400, json_schema_extra=policy("in_place"))
    # Converted in place, once every node has unmounted it (hpclz.plan.policies NFS_CONVERSION cites Azure).
    protocol: Literal["NFSv3", "NFSv4.1"] = Field(default="NFSv3", json_schema_extra=policy("restart_nodes"))
    mount_point: MountPoint = Field(
        default="/shared",
        description="Where home directories live (CycleCloud keeps users' homes in <mount_point>/home).",
        json_schema_extra=policy("restart_nodes"),
    )


class ExistingShared(StrictModel):
    """An NFS server hpclz does not manage (an existing Azure NetApp Files volume, an NFS appliance)."""

    mode: Literal["existing"] = "existing"
    address: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*$", json_schema_extra=policy("restart_nodes"))
    home_export: MountPoint = Field(json_schema_extra=policy("restart_nodes"))
    sched_export: MountPoint = Field(json_schema_extra=policy("restart_nodes"))
    # CCWS's NFS mount options (Azure/cyclecloud-slurm-workspace bicep/ccw.bicep).
    options: str = Field(
        default="rw,hard,rsize=262144,wsize=262144,vers=3,tcp,_netdev,nconnect=8",
        pattern=r"^[A-Za-z0-9_=,.-]+$",
    )
    mount_point: MountPoint = Field(default="/shared", json_schema_extra=policy("restart_nodes"))


Lustre = Annotated[NewLustre | ExistingLustre | Disabled, Field(discriminator="mode")]
NetApp = Annotated[NewNetApp | ExistingNetApp | Disabled, Field(discriminator="mode")]
Blob = Annotated[NewBlob | ExistingBlob | Disabled, Field(discriminator="mode")]
Shared = Annotated[AzureFilesShared | NetAppShared | ExistingShared | Disabled, Field(discriminator="mode")]


class Scratch(StrictModel):
    """Where jobs find fast scratch: node-local NVMe or a directory on Lustre."""

    source: Literal["nvme", "lustre", "none"] = "nvme"
    path: MountPoint = "/scratch"


class Storage(StrictModel):
    lustre: Lustre = Field(default_factory=Disabled)
    netapp: NetApp = Field(default_factory=Disabled)
    blob: Blob = Field(default_factory=Disabled)
    scratch: Scratch = Field(default_factory=Scratch)
    shared: Shared = Field(
        default_factory=Disabled,
        description="Shared home and /sched for scheduler, login and compute nodes (off: both stay on the scheduler).",
    )
