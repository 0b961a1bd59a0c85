"""Storage: Managed Lustre, NetApp Files, Blob for checkpoints and datasets, scratch."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from hpclz.config.base import ContainerName, Disabled, Guid, ResourceId, StrictModel, policy

MountPoint = Annotated[str, Field(pattern=r"^/[A-Za-z0-9_./-]*$")]


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
    capacity_tib: int = Field(ge=4, json_schema_extra=policy("replace_data"))
    mount_point: MountPoint = "/lustre"
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
    quota_gib: int = Field(ge=50, json_schema_extra=policy("in_place"))
    protocol: Literal["NFSv3", "NFSv4.1"] = Field(default="NFSv4.1", json_schema_extra=policy("replace_data"))
    mount_point: MountPoint


class NewNetApp(StrictModel):
    mode: Literal["new"] = "new"
    service_level: Literal["Standard", "Premium", "Ultra"] = Field(
        default="Premium", json_schema_extra=policy("in_place")
    )
    pool_size_tib: int = Field(ge=1, json_schema_extra=policy("in_place"))
    volumes: list[NetAppVolume] = Field(min_length=1)


class ExistingNetApp(StrictModel):
    mode: Literal["existing"] = "existing"
    account_resource_id: ResourceId
    volumes: list[NetAppVolume] = Field(min_length=1)


class BlobContainer(StrictModel):
    name: ContainerName
    purpose: Literal["checkpoints", "datasets", "general"] = "general"
    versioning: bool = Field(default=True, description="Blob versioning protects checkpoints from overwrite.")


class Lifecycle(StrictModel):
    """Move blobs to cheaper tiers as they age; empty means keep them hot."""

    # In tier order: HPCLZ-COST-004 compares each step with the one declared before it.
    cool_after_days: int | None = Field(default=30, ge=1)
    cold_after_days: int | None = Field(default=None, ge=1)
    archive_after_days: int | None = Field(default=None, ge=1)
    delete_after_days: int | None = Field(default=None, ge=1)


class NewBlob(StrictModel):
    mode: Literal["new"] = "new"
    replication: Literal["LRS", "ZRS", "GRS", "GZRS"] = Field(default="ZRS", json_schema_extra=policy("replace_data"))
    containers: list[BlobContainer] = Field(min_length=1)
    soft_delete_days: int = Field(default=14, ge=1, le=365)
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    private_endpoint: bool = True
    allow_public_access: bool = False
    min_tls_version: Literal["TLS1_2", "TLS1_3"] = "TLS1_2"


class ExistingBlob(StrictModel):
    mode: Literal["existing"] = "existing"
    resource_id: ResourceId
    containers: list[BlobContainer] = Field(min_length=1)


Lustre = Annotated[NewLustre | ExistingLustre | Disabled, Field(discriminator="mode")]
NetApp = Annotated[NewNetApp | ExistingNetApp | Disabled, Field(discriminator="mode")]
Blob = Annotated[NewBlob | ExistingBlob | Disabled, Field(discriminator="mode")]


class Scratch(StrictModel):
    """Where jobs find fast scratch: node-local NVMe or a directory on Lustre."""

    source: Literal["nvme", "lustre", "none"] = "nvme"
    path: MountPoint = "/scratch"


class Storage(StrictModel):
    lustre: Lustre = Field(default_factory=Disabled)
    netapp: NetApp = Field(default_factory=Disabled)
    blob: Blob = Field(default_factory=Disabled)
    scratch: Scratch = Field(default_factory=Scratch)
