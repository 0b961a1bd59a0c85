"""Compute: the CycleCloud-managed Slurm cluster and its partitions."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from hpclz.config.base import StrictModel, policy
from hpclz.config.constraints import Integer, Number, SafeMountPath
from hpclz.config.zones import AvailabilityZone

VM_SIZE_PATTERN = r"^Standard_[A-Za-z0-9_]+$"
IMAGE_URN_PATTERN = r"^[A-Za-z0-9._-]+:[A-Za-z0-9._-]+:[A-Za-z0-9._-]+:[A-Za-z0-9._-]+$"
# CycleCloud's ImageName takes a marketplace URN or the resource ID of a custom image, Azure Compute Gallery
# image versions included (learn.microsoft.com/azure/cyclecloud/how-to/create-custom-image, ms.date 07/01/2025:
# ".../providers/Microsoft.Compute/galleries/MyGallery/images/MyImage/versions/1.0.0"). A definition without
# /versions/ deploys its latest version (learn.microsoft.com/azure/virtual-machines/vm-generalized-image-version).
GALLERY_IMAGE_PATTERN = (
    r"/subscriptions/[^/]+/resource[Gg]roups/[^/]+/providers/[Mm]icrosoft\.[Cc]ompute/"
    r"(galleries/[^/]+/images/[^/]+(/versions/[^/]+)?|images/[^/]+)"
)
IMAGE_PATTERN = rf"^({IMAGE_URN_PATTERN[1:-1]}|{GALLERY_IMAGE_PATTERN})$"
DEFAULT_HPC_IMAGE = "microsoft-dsvm:ubuntu-hpc:2204:latest"


class CycleCloud(StrictModel):
    """Azure CycleCloud runs the Slurm cluster. Versions are pinned: an upgrade is a deliberate change."""

    # A new 8.x release is an in-place package upgrade on the running server, which keeps its database
    # (learn.microsoft.com/azure/cyclecloud/how-to/upgrade-and-migrate: "You can upgrade the Azure CycleCloud
    # application in place"); hpclz-cluster-sync runs it when userData names the release. Only a new image replaces
    # the server: see `image_release`.
    version: str = Field(default="8.9.1", pattern=r"^\d+\.\d+\.\d+$", json_schema_extra=policy("in_place"))
    # In userData: hpclz-cluster-sync fetches and uploads the new release and imports the cluster again, in place.
    slurm_project_version: str = Field(
        default="4.0.9", pattern=r"^\d+\.\d+\.\d+$", json_schema_extra=policy("in_place")
    )
    slurm_version: str = Field(default="25.11.5", pattern=r"^\d+\.\d+\.\d+(-\d+)?$")

    @property
    def slurm_reads_topology_yaml(self) -> bool:
        """Slurm 25.05 added topology.yaml, several topologies with each partition naming its own
        (https://slurm.schedmd.com/topology.yaml.html, dated May 2025; Debian trixie's 24.11.5 ships only
        topology.conf(5)): from 25.05 hpclz schedules racks by a per-partition block topology."""
        major, minor = self.slurm_version.split(".")[:2]
        return (int(major), int(minor)) >= (25, 5)

    @property
    def server_image_release(self) -> str:
        """The release whose Marketplace image the server boots: the one it was created from."""
        return self.image_release or self.version

    # The released project's files (project.ini [blobs] Files, which `cyclecloud project upload` takes from blobs/:
    # Azure/cyclecloud-slurm@50e6739:docker-package.sh l.22-46) by SHA-256, as published with the release. hpclz
    # ships none: no public source read here states the 4.0.9 assets' digests, and a digest hpclz computed from a
    # download it cannot make would be invented. Given, hpclz-cluster-sync uploads nothing that differs; empty, it
    # records the first fetch's digests in the locker and refuses a later fetch that differs (docs/locker.md).
    slurm_project_sha256: dict[
        Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}$")],
        Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")],
    ] = Field(
        default_factory=dict,
        description=(
            "SHA-256 of each file of the cyclecloud-slurm release (e.g. azure-slurm-pkg-4.0.9.tar.gz), from the "
            "release's assets; empty: the first fetch is uploaded as GitHub serves it and its digests are recorded in "
            "the locker (hpclz/cyclecloud-slurm-<version>.sha256.json), and a later fetch that differs is refused. "
            "Set, the fetch must match these, and so must the record."
        ),
        json_schema_extra=policy("in_place"),
    )
    # Azure resizes a VM in place and restarts it (learn.microsoft.com/azure/virtual-machines/sizes/resize-vm): the
    # server keeps its disks, so a new size is a restart, never a replacement.
    vm_size: str = Field(default="Standard_D4as_v5", pattern=VM_SIZE_PATTERN, json_schema_extra=policy("restart_nodes"))
    image_release: str | None = Field(
        default=None,
        pattern=r"^\d+\.\d+\.\d+$",
        description=(
            "The CycleCloud release whose Marketplace image the server was created from; unset: `version`. When "
            "`version` moves to a newer release, keep this at the release the server was created with: the server "
            "then upgrades CycleCloud in place and keeps its database; a new value recreates the server."
        ),
        json_schema_extra=policy("replace"),
    )
    image: str | None = Field(
        default=None,
        pattern=IMAGE_URN_PATTERN,
        description=(
            "Unset: Microsoft's CycleCloud Marketplace image of `image_release` (or `version`) "
            "(azurecyclecloud:azure-cyclecloud:cyclecloud8-gen2:<its image version>), as CCWS deploys it."
        ),
        json_schema_extra=policy("replace"),
    )


class NodeRole(StrictModel):
    """The scheduler node and the login nodearray: CycleCloud's nodes, defined in the cluster that travels in the
    CycleCloud VM's userData (updated in place). A new size or image reaches a node the next time CycleCloud starts
    it; the scheduler's /sched and /shared volumes are `Persistent = True`, which CycleCloud keeps when the node is
    terminated and re-attaches "the next time the node is started" (docs.cyclecomputing.com/user-guide-v6.8.1/storage),
    and with `storage.shared` both live on the shares. So either change is
    a restart of the node in a maintenance window, never a replacement that loses data."""

    vm_size: str = Field(pattern=VM_SIZE_PATTERN, json_schema_extra=policy("restart_nodes"))
    image: str = Field(default=DEFAULT_HPC_IMAGE, pattern=IMAGE_PATTERN, json_schema_extra=policy("restart_nodes"))


class LoginNodes(NodeRole):
    count: Integer = Field(default=1, ge=0, le=10)


class NvmeScratch(StrictModel):
    """Local NVMe disks striped as RAID0 and mounted for job scratch at every boot (data lost on deallocation)."""

    enabled: bool = True
    mount_point: SafeMountPath = Field(default="/mnt/nvme", pattern=r"^/[A-Za-z0-9_./-]*$")
    filesystem: Literal["xfs", "ext4"] = "xfs"


class Containers(StrictModel):
    enroot: bool = True
    pyxis: bool = True


class Partition(StrictModel):
    """A Slurm partition backed by one CycleCloud nodearray of a single VM size."""

    name: str = Field(
        pattern=r"^[a-z][a-z0-9_-]{0,14}$",
        description="Slurm partition and nodearray name.",
        json_schema_extra=policy("not_allowed"),
    )
    vm_size: str = Field(pattern=VM_SIZE_PATTERN, json_schema_extra=policy("drain_partition"))
    max_nodes: Integer = Field(ge=1, le=10000, json_schema_extra=policy("in_place"))
    priority: Literal["regular", "spot"] = Field(default="regular", json_schema_extra=policy("drain_partition"))
    eviction_policy: Literal["delete", "deallocate"] | None = Field(
        default=None,
        description="Spot only: what Azure does with an evicted node.",
        json_schema_extra=policy("drain_partition"),
    )
    spot_max_price: Number = Field(
        default=-1,
        description="Spot only: USD/hour cap, -1 = pay up to on-demand.",
        json_schema_extra=policy("drain_partition"),
    )
    image: str = Field(default=DEFAULT_HPC_IMAGE, pattern=IMAGE_PATTERN, json_schema_extra=policy("drain_partition"))
    infiniband: bool = Field(default=False, json_schema_extra=policy("drain_partition"))
    gpu_clocks: Literal["default", "max"] = Field(
        default="default",
        description="`max` locks GPU application clocks at their maximum, at every boot (a oneshot service before slurmd).",
        json_schema_extra=policy("drain_partition"),
    )
    # Node settings applied at boot: running nodes keep the old ones until the partition is drained.
    nvme_scratch: NvmeScratch | None = Field(default=None, json_schema_extra=policy("drain_partition"))
    containers: Containers = Field(default_factory=Containers, json_schema_extra=policy("drain_partition"))
    idle_shutdown_minutes: Integer | None = Field(
        default=None,
        ge=1,
        le=1440,
        description=(
            "Stop idle nodes after this long (Slurm SuspendTime). Cluster-wide: the shortest partition's value "
            "applies to every partition (cyclecloud-slurm writes no per-partition SuspendTime; HPCLZ-COST-005); "
            "none set anywhere: cyclecloud-slurm's 5 minutes."
        ),
    )
    default: bool = False
    zone: AvailabilityZone | None = Field(
        default=None,
        description="Availability zone of the partition's nodes (CycleCloud nodearray Zone); none: Azure picks.",
        json_schema_extra=policy("drain_partition"),
    )

    @property
    def active_nvme_scratch(self) -> NvmeScratch | None:
        """The NVMe scratch settings when scratch is switched on, else None."""
        return self.nvme_scratch if self.nvme_scratch is not None and self.nvme_scratch.enabled else None

    @model_validator(mode="after")
    def _spot_only_settings(self) -> Partition:
        if self.priority == "regular" and self.eviction_policy is not None:
            raise ValueError("eviction_policy applies only to priority: spot")
        if self.priority == "spot" and self.eviction_policy is None:
            self.eviction_policy = "delete"
        return self


class ExistingAccounting(StrictModel):
    """Slurm accounting (slurmdbd) on a MySQL server hpclz does not manage, as CCWS offers it: CCWS's UI
    "only supports job accounting in existing MySQL instances" (Azure/cyclecloud-slurm-workspace
    uidefinitions/createUiDefinition.json). cyclecloud-slurm reads slurm.accounting.{enabled,url,user,password}
    (Azure/cyclecloud-slurm templates/slurm.txt). The password never appears in a rendered file: the CycleCloud
    server reads it from the landing zone's Key Vault with the scheduler identity when it imports the cluster."""

    mode: Literal["existing"] = "existing"
    url: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*$",
        description="The MySQL server's host name or private IP (slurm.accounting.url).",
        json_schema_extra=policy("restart_nodes"),
    )
    user: str = Field(pattern=r"^[A-Za-z0-9_.@-]{1,80}$", json_schema_extra=policy("restart_nodes"))
    password_secret_name: str = Field(
        pattern=r"^[0-9a-zA-Z-]{1,127}$",
        description="Name of the identity.key_vault.secrets entry that holds the database password.",
        json_schema_extra=policy("restart_nodes"),
    )


class NewAccounting(StrictModel):
    """Slurm accounting on an Azure Database for MySQL flexible server that hpclz creates, with private access only
    (VNet integration: a subnet delegated to Microsoft.DBforMySQL/flexibleServers and a private DNS zone ending in
    mysql.database.azure.com, learn.microsoft.com/azure/mysql/flexible-server/concepts-networking-vnet), as CCWS's
    bicep/mysql.bicep creates one (Azure/cyclecloud-slurm-workspace@bc0fc1b). slurmdbd signs in as the server's
    administrator, whose password is the Key Vault secret named here: a secure template parameter at deploy, read
    from Key Vault by the CycleCloud server at cluster import, never rendered or stored in state."""

    mode: Literal["new"] = "new"
    # Tiers and sizes: learn.microsoft.com/azure/mysql/flexible-server/concepts-service-tiers-storage. Changing
    # either restarts the server (60-120 s): slurmdbd reconnects, running jobs are unaffected.
    tier: Literal["Burstable", "GeneralPurpose", "MemoryOptimized"] = Field(
        default="Burstable", json_schema_extra=policy("restart_nodes")
    )
    sku: str = Field(
        default="Standard_B2ms",
        pattern=r"^Standard_[A-Za-z0-9_]{2,30}$",
        description="Compute size, e.g. Standard_B2ms (Burstable) or Standard_D2ads_v5 (GeneralPurpose).",
        json_schema_extra=policy("restart_nodes"),
    )
    storage_gib: Integer = Field(
        default=20,
        ge=20,
        le=16384,
        description="Provisioned storage (20 GiB to 16 TiB); it can grow, never shrink.",
        json_schema_extra=policy("in_place"),
    )
    backup_retention_days: Integer = Field(
        default=7,
        ge=1,
        le=35,
        description="Days of automated backups kept for point-in-time restore (Azure allows 1 to 35, default 7).",
        json_schema_extra=policy("in_place"),
    )
    geo_redundant_backup: bool = Field(
        default=False,
        description="Copy backups to the paired region (geo-restore); set at creation, or turned on later.",
        json_schema_extra=policy("in_place"),
    )
    high_availability: Literal["Disabled", "SameZone", "ZoneRedundant"] = Field(
        default="Disabled",
        description="A standby replica (not on Burstable). ZoneRedundant needs zone and standby_zone, set at creation.",
        json_schema_extra=policy("not_allowed"),
    )
    zone: Literal["1", "2", "3"] | None = Field(default=None, json_schema_extra=policy("replace_data"))
    standby_zone: Literal["1", "2", "3"] | None = Field(default=None, json_schema_extra=policy("not_allowed"))
    admin_user: str = Field(
        default="slurmdbd",
        pattern=r"^[a-z_][a-z0-9_]{0,31}$",
        description="The server's administrator login, which slurmdbd uses (set only at creation).",
        json_schema_extra=policy("not_allowed"),
    )
    password_secret_name: str = Field(
        pattern=r"^[0-9a-zA-Z-]{1,127}$",
        description="Name of the identity.key_vault.secrets entry that holds the administrator password.",
        json_schema_extra=policy("restart_nodes"),
    )


class NoAccounting(StrictModel):
    mode: Literal["disabled"] = "disabled"


class Compute(StrictModel):
    cyclecloud: CycleCloud = Field(default_factory=CycleCloud)
    scheduler: NodeRole = Field(default_factory=lambda: NodeRole(vm_size="Standard_D8as_v5"))
    login: LoginNodes = Field(default_factory=lambda: LoginNodes(vm_size="Standard_D8as_v5"))
    partitions: list[Partition] = Field(min_length=1)  # duplicate names: HPCLZ-CMP-008, located on the copy
    accounting: NewAccounting | ExistingAccounting | NoAccounting = Field(
        default_factory=NoAccounting, discriminator="mode", description="Slurm accounting (sacct, fair-share)."
    )
    # A VM's zone is fixed at creation: moving the CycleCloud server or the scheduler means a new VM.
    service_zone: AvailabilityZone | None = Field(
        default=None,
        description="Availability zone of the CycleCloud server, scheduler and login nodes; none: regional.",
        json_schema_extra=policy("replace"),
    )
    quotas: dict[str, Integer] = Field(
        default_factory=dict,
        description="Declared vCPU quota per quota family (e.g. standardNDSH100v5Family: 1024), for offline checks.",
    )

    def custom_images(self) -> tuple[tuple[tuple[str | int, ...], str, str, str], ...]:
        """(config path, who, VM size, image ID) of each node role that boots a custom image, not a marketplace URN."""
        roles: list[tuple[tuple[str | int, ...], str, str, str]] = [
            (("compute", role, "image"), role, node.vm_size, node.image)
            for role, node in (("scheduler", self.scheduler), ("login", self.login))
        ]
        roles += [
            (("compute", "partitions", i, "image"), f"partition {p.name}", p.vm_size, p.image)
            for i, p in enumerate(self.partitions)
        ]
        return tuple(role for role in roles if role[3].startswith("/"))

    def service_vms(self) -> tuple[tuple[str, str, int], ...]:
        """(role, VM size, count) of the VMs that run the cluster rather than jobs; role is their key here."""
        return (
            ("scheduler", self.scheduler.vm_size, 1),
            ("login", self.login.vm_size, self.login.count),
            ("cyclecloud", self.cyclecloud.vm_size, 1),
        )
