"""Storage rules: Managed Lustre sizing and HSM, NetApp capacity, blob checkpoints, subnets, global names, shared home."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from hpclz.config.storage import AzureFilesShared, NetAppShared
from hpclz.findings import Finding, Severity
from hpclz.naming import CYCLECLOUD_LABEL, NAME_RULES
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

LUSTRE = ("storage", "lustre")
NETAPP = ("storage", "netapp")
BLOB = ("storage", "blob")


class LustreCapacityValid(Rule[ConfigContext]):
    """Each AMLFS SKU has its own minimum, increment and default maximum capacity (40: 48/48/768 TiB;
    125: 16/16/128; 250: 8/8/128; 500: 4/4/128). Larger file systems need a support request.
    Source: learn.microsoft.com/azure/azure-managed-lustre/create-file-system-portal#throughput-configurations"""

    id = "HPCLZ-STO-001"
    severity = Severity.ERROR
    title = "Lustre capacity is not a valid size for its SKU"
    fix = "Set storage.lustre.capacity_tib to a multiple of the SKU's increment between its minimum and maximum."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        lustre = ctx.config.storage.lustre
        if lustre.mode != "new":
            return
        facts = ctx.catalog.service("lustre", "skus", lustre.sku)
        low, step, high = facts["min_tib"], facts["increment_tib"], facts["max_tib"]
        where = (*LUSTRE, "capacity_tib")
        size = lustre.capacity_tib
        if size < low or size % step:
            yield self.finding(
                ctx,
                where,
                f"{size} TiB is not valid for {lustre.sku}: it needs at least {low} TiB in steps of {step} TiB",
                fix=f"Use {max(low, -(-size // step) * step)} TiB, or a SKU with a smaller increment.",
            )
        elif size > high:
            yield self.finding(
                ctx,
                where,
                f"{size} TiB is above {lustre.sku}'s {high} TiB maximum; Azure grants it only on a support request",
                severity=Severity.WARNING,
                fix="Open a support request for the larger capacity before deploying, or reduce capacity_tib.",
            )


class LustreHsmContainerExists(Rule[ConfigContext]):
    """Lustre HSM imports from and exports to one blob container of the landing zone's storage account;
    a container that is not declared there does not exist when the file system is created."""

    id = "HPCLZ-STO-002"
    severity = Severity.ERROR
    title = "Lustre HSM container is not among the blob containers"
    fix = "Add the container to storage.blob.containers, or correct storage.lustre.hsm.container."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        lustre = ctx.config.storage.lustre
        blob = ctx.config.storage.blob
        if lustre.mode != "new" or lustre.hsm is None:
            return
        names = [] if blob.mode == "disabled" else [c.name for c in blob.containers]
        if lustre.hsm.container not in names:
            have = f"blob containers are {', '.join(names)}" if names else "storage.blob is disabled"
            yield self.finding(
                ctx, (*LUSTRE, "hsm", "container"), f"HSM container {lustre.hsm.container!r} is not declared ({have})"
            )


class NetAppQuotasFitPool(Rule[ConfigContext]):
    """Volumes are carved from the capacity pool: the sum of their quotas cannot exceed the pool size
    (minimum pool 1 TiB for every service level, minimum volume 50 GiB; the model enforces both). A pool holds
    at most 2,048 TiB. Source: learn.microsoft.com/azure/azure-netapp-files/azure-netapp-files-resource-limits"""

    id = "HPCLZ-STO-003"
    severity = Severity.ERROR
    title = "NetApp capacity pool too small for its volumes, or above the pool maximum"
    fix = "Grow storage.netapp.pool_size_tib or shrink volume quota_gib values."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        netapp = ctx.config.storage.netapp
        if netapp.mode != "new":
            return
        most = ctx.catalog.service("netapp", "max_pool_tib")
        if netapp.pool_size_tib > most:
            yield self.finding(
                ctx,
                (*NETAPP, "pool_size_tib"),
                f"a capacity pool holds at most {most} TiB; {netapp.pool_size_tib} TiB was asked for",
                fix="Split the volumes over several capacity pools.",
            )
        total = sum(v.quota_gib for v in netapp.volumes)
        shared = ctx.config.storage.shared
        # storage.shared mode netapp carves home and /sched from the same pool.
        extra = shared.home_gib + shared.sched_gib if isinstance(shared, NetAppShared) else 0
        pool = netapp.pool_size_tib * 1024
        if total + extra > pool:
            with_shared = f" (with {extra} GiB of shared home and /sched)" if extra else ""
            yield self.finding(
                ctx,
                (*NETAPP, "pool_size_tib"),
                f"volumes ask for {total + extra} GiB{with_shared} but the {netapp.service_level} pool holds "
                f"{pool} GiB ({netapp.pool_size_tib} TiB)",
            )


class NetAppVolumeSize(Rule[ConfigContext]):
    """A regular Azure NetApp Files volume holds at most 100 TiB; larger needs a large volume, which hpclz
    does not create."""

    id = "HPCLZ-STO-004"
    severity = Severity.ERROR
    title = "NetApp volume larger than a regular volume allows"
    fix = "Split the data over several volumes of at most 102400 GiB each."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        netapp = ctx.config.storage.netapp
        if netapp.mode == "disabled":
            return
        limit = ctx.catalog.service("netapp", "max_regular_volume_gib")
        for i, volume in enumerate(netapp.volumes):
            if volume.quota_gib > limit:
                yield self.finding(
                    ctx,
                    (*NETAPP, "volumes", i, "quota_gib"),
                    f"volume {volume.name} asks for {volume.quota_gib} GiB; a regular volume holds at most {limit} GiB",
                )


class GlobalNamesValid(Rule[ConfigContext]):
    """Storage account (3-24 lowercase letters and digits) and Key Vault (3-24 letters, digits, single hyphens)
    names are global; the naming convention can push them past the limit once name, environment, region and
    suffix are joined."""

    id = "HPCLZ-STO-005"
    severity = Severity.ERROR
    title = "Storage account or Key Vault name breaks Azure's naming rules"
    fix = "Shorten metadata.name or organization.naming.unique_suffix, or set naming.include_region: false."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        # The CycleCloud locker's account is always created (compute.cyclecloud), with a part of its own.
        wanted: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
            ("storage_account", ("compute", "cyclecloud"), (CYCLECLOUD_LABEL,))
        ]
        if ctx.config.storage.blob.mode == "new":
            wanted.append(("storage_account", ("storage", "blob"), ()))
        if ctx.config.identity.key_vault.mode == "new":
            wanted.append(("key_vault", ("identity", "key_vault"), ()))
        for kind, path, parts in wanted:
            name = ctx.names.name(kind, *parts)
            for problem in NAME_RULES[kind].problems(name):
                yield self.finding(
                    ctx,
                    ("metadata", "name"),
                    f"the {kind.replace('_', ' ')} name {name!r} {problem} (for {'.'.join(path)})",
                )


class CheckpointVersioning(Rule[ConfigContext]):
    """Versioning keeps the previous checkpoint when a crashed writer overwrites it half-way."""

    id = "HPCLZ-STO-006"
    severity = Severity.WARNING
    title = "Checkpoint container without blob versioning"
    fix = "Set versioning: true on containers with purpose: checkpoints."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode == "disabled":
            return
        for i, container in enumerate(blob.containers):
            if container.purpose == "checkpoints" and not container.versioning:
                yield self.finding(
                    ctx,
                    (*BLOB, "containers", i, "versioning"),
                    f"container {container.name} holds checkpoints unversioned",
                )


class StorageSubnetsPresent(Rule[ConfigContext]):
    """New Lustre needs its own subnet, NetApp volumes a delegated one, private endpoints a subnet to live in."""

    id = "HPCLZ-STO-007"
    severity = Severity.ERROR
    title = "Storage service without the subnet it needs"
    fix = "Add the named subnet under network.vnet.subnets, or disable the service."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        storage = ctx.config.storage
        subnets = ctx.config.network.vnet.subnets
        needs = [
            (storage.lustre.mode == "new", "lustre", LUSTRE, "a new Managed Lustre file system"),
            (storage.netapp.mode != "disabled", "netapp", NETAPP, "NetApp volumes"),
            (
                storage.blob.mode == "new" and storage.blob.private_endpoint,
                "private_endpoints",
                (*BLOB, "private_endpoint"),
                "the storage account's private endpoint",
            ),
        ]
        for wanted, role, path, what in needs:
            if wanted and getattr(subnets, role) is None:
                yield self.finding(ctx, path, f"{what} needs network.vnet.subnets.{role}, which is not declared")


class NoPublicBlobAccess(Rule[ConfigContext]):
    """Training data and checkpoints are private; anonymous blob access exposes them (CAF security baseline)."""

    id = "HPCLZ-STO-008"
    severity = Severity.WARNING
    title = "Storage account allows public blob access"
    fix = "Set storage.blob.allow_public_access: false."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode == "new" and blob.allow_public_access:
            yield self.finding(
                ctx, (*BLOB, "allow_public_access"), "the storage account allows anonymous public access"
            )


class ScratchSourceAvailable(Rule[ConfigContext]):
    """Job scratch on Lustre needs Lustre; scratch on NVMe needs at least one partition that sets it up."""

    id = "HPCLZ-STO-009"
    severity = Severity.ERROR
    title = "Scratch source is not provided by any storage"
    fix = "Enable the storage storage.scratch.source names, or change the source."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        storage = ctx.config.storage
        source = storage.scratch.source
        if source == "lustre" and storage.lustre.mode == "disabled":
            yield self.finding(
                ctx, ("storage", "scratch", "source"), "scratch is on Lustre but storage.lustre is disabled"
            )
        if source == "nvme" and not any(p.active_nvme_scratch for p in ctx.config.compute.partitions):
            yield self.finding(
                ctx,
                ("storage", "scratch", "source"),
                "scratch is on NVMe but no partition enables nvme_scratch",
                severity=Severity.WARNING,
            )


class ScratchOnEveryPartition(Rule[ConfigContext]):
    """With scratch on NVMe, storage.scratch.path exists only on partitions that build NVMe scratch
    (templates/cloud-init/node.sh.j2 links it to the array): a job script that writes to it on any other partition
    fails. A partition whose size has local NVMe disks (the SKU catalog's nvme_disks) and does not stripe them is
    the config promising /scratch and the nodes not keeping the promise."""

    id = "HPCLZ-STO-060"
    severity = Severity.WARNING
    title = "A partition gets no job scratch although its size has local NVMe disks"
    fix = "Add nvme_scratch: {enabled: true} to the partition, so storage.scratch.path exists on its nodes too."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.config.storage.scratch.source != "nvme":
            return
        for i, p in enumerate(ctx.config.compute.partitions):
            sku = ctx.catalog.sku(p.vm_size)
            if p.active_nvme_scratch is None and sku is not None and sku.nvme_disks > 0:
                yield self.finding(
                    ctx,
                    ("compute", "partitions", i, "vm_size"),
                    f"partition {p.name}: {p.vm_size} has {sku.nvme_disks} local NVMe disks but no nvme_scratch, "
                    f"so {ctx.config.storage.scratch.path} does not exist on its nodes",
                )


class ProdCheckpointRedundancy(Rule[ConfigContext]):
    """Locally redundant storage keeps every copy in one datacenter; a production training run's checkpoints
    should survive a zone outage (ZRS or geo-redundant)."""

    id = "HPCLZ-STO-010"
    severity = Severity.WARNING
    title = "Production checkpoints on locally redundant storage"
    fix = "Set storage.blob.replication to ZRS (or GZRS) in production."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode == "new" and ctx.is_prod and blob.replication == "LRS" and ctx.has_checkpoint_container:
            yield self.finding(ctx, (*BLOB, "replication"), "production checkpoints are stored LRS (one datacenter)")


class MountPointsDistinct(Rule[ConfigContext]):
    """Two file systems mounted at one path hide each other; the second mount wins silently."""

    id = "HPCLZ-STO-011"
    severity = Severity.ERROR
    title = "Two file systems share a mount point"
    fix = "Give Lustre, each NetApp volume and NVMe scratch their own mount points."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        storage = ctx.config.storage
        mounts: list[tuple[str, tuple[str | int, ...], str]] = []
        if storage.lustre.mode != "disabled":
            mounts.append((storage.lustre.mount_point, (*LUSTRE, "mount_point"), "Lustre"))
        if storage.netapp.mode != "disabled":
            for i, v in enumerate(storage.netapp.volumes):
                mounts.append((v.mount_point, (*NETAPP, "volumes", i, "mount_point"), f"NetApp volume {v.name}"))
        for i, p in enumerate(ctx.config.compute.partitions):
            nvme = p.active_nvme_scratch
            if nvme is not None:
                mounts.append((nvme.mount_point, ("compute", "partitions", i, "nvme_scratch", "mount_point"), "NVMe"))
        seen: dict[str, str] = {}
        for point, path, what in mounts:
            key = point.rstrip("/") or "/"
            if key in seen and not (what == "NVMe" and seen[key] == "NVMe"):
                yield self.finding(ctx, path, f"{what} mounts at {point}, already used by {seen[key]}")
            seen.setdefault(key, what)


class NewFileSystemsNeedComputeIdentity(Rule[ConfigContext]):
    """A Lustre or NetApp file system hpclz creates has its address only after deployment; nodes look it up in
    ARM with the compute managed identity at boot. With that identity switched off, render cannot mount it and the
    nodes come up without the shared file system."""

    id = "HPCLZ-STO-012"
    severity = Severity.WARNING
    title = "New shared file system will not be mounted: compute identity is off"
    fix = "Set identity.managed_identities.compute: true, or use mode: existing with the file system's address."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.config.identity.managed_identities.compute:
            return
        storage = ctx.config.storage
        for name, block, path in (("Lustre", storage.lustre, LUSTRE), ("NetApp", storage.netapp, NETAPP)):
            if block.mode == "new":
                yield self.finding(
                    ctx,
                    path,
                    f"{name} is new but identity.managed_identities.compute is false: nodes cannot look up its "
                    "address, so it is not mounted",
                )


SHARED = ("storage", "shared")
# Provisioned v1 premium file shares start at 100 GiB
# (https://learn.microsoft.com/en-us/azure/storage/files/understanding-billing#provisioned-v1-model); Kubernetes'
# Azure File provisioner rounds premium shares up to the same minimum (kubernetes/kubernetes#99122).
PREMIUM_SHARE_MIN_GIB = 100
SCHED = "/sched"


class SharedShareSize(Rule[ConfigContext]):
    """A premium (provisioned v1) Azure file share is provisioned at least 100 GiB; a smaller shareQuota is
    refused by the storage service. Source: learn.microsoft.com/azure/storage/files/understanding-billing
    (provisioned v1 model), and the same minimum in kubernetes/kubernetes#99122."""

    id = "HPCLZ-STO-040"
    severity = Severity.ERROR
    title = "Azure Files NFS share below the 100 GiB premium minimum"
    fix = "Set storage.shared.home_gib and storage.shared.sched_gib to 100 or more."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        shared = ctx.config.storage.shared
        if not isinstance(shared, AzureFilesShared):
            return
        for field, size in (("home_gib", shared.home_gib), ("sched_gib", shared.sched_gib)):
            if size < PREMIUM_SHARE_MIN_GIB:
                yield self.finding(
                    ctx, (*SHARED, field), f"{size} GiB is below the {PREMIUM_SHARE_MIN_GIB} GiB premium share minimum"
                )


class SharedNeedsPrivateEndpoint(Rule[ConfigContext]):
    """NFS Azure file shares have no TLS and no identity-based access: Azure accepts NFS only from a virtual
    network, through a private endpoint or a service endpoint
    (learn.microsoft.com/azure/storage/files/files-nfs-protocol#security-and-networking). hpclz reaches the share
    through a private endpoint in the private-endpoints subnet and does not render it without one."""

    id = "HPCLZ-STO-041"
    severity = Severity.ERROR
    title = "Azure Files shared home needs the private-endpoints subnet"
    fix = "Add network.vnet.subnets.private_endpoints, or use storage.shared mode: existing."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        shared = ctx.config.storage.shared
        if isinstance(shared, AzureFilesShared) and ctx.config.network.vnet.subnets.private_endpoints is None:
            yield self.finding(
                ctx, (*SHARED, "mode"), "azure_files needs a private endpoint, but no private_endpoints subnet exists"
            )


class SharedMountHidesNothing(Rule[ConfigContext]):
    """CycleCloud mounts shared home and /sched during its converge, after the node's cloud-init has mounted
    Lustre and NetApp volumes; a file system mounted inside, over or around one of those paths hides the other.
    CycleCloud itself mounts /sched for cyclecloud-slurm (Azure/cyclecloud-slurm templates/slurm.txt)."""

    id = "HPCLZ-STO-042"
    severity = Severity.ERROR
    title = "Shared home mount overlaps another mount"
    fix = "Move storage.shared.mount_point, or the other file system's mount point, so neither contains the other."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        shared = ctx.config.storage.shared
        if shared.mode == "disabled":
            return
        home = PurePosixPath(shared.mount_point)
        for point, what in _other_mounts(ctx):
            other = PurePosixPath(point)
            if home == other or home in other.parents or other in home.parents:
                yield self.finding(ctx, (*SHARED, "mount_point"), f"shared home at {home} overlaps {what} at {other}")


def _other_mounts(ctx: ConfigContext) -> Iterator[tuple[str, str]]:
    storage = ctx.config.storage
    yield SCHED, "/sched (scheduler state)"
    if storage.lustre.mode != "disabled":
        yield storage.lustre.mount_point, "Lustre"
    if storage.netapp.mode != "disabled":
        for volume in storage.netapp.volumes:
            yield volume.mount_point, f"NetApp volume {volume.name}"
    if storage.scratch.source != "none":
        yield storage.scratch.path, "scratch"


class SharedNetAppNeedsPool(Rule[ConfigContext]):
    """storage.shared mode netapp puts home and /sched on two volumes (hpclz-home, hpclz-sched) in the capacity
    pool hpclz creates for storage.netapp, so that block must be `new`. Their mount addresses exist only once ANF has
    placed them in the delegated subnet; the CycleCloud server reads them from ARM with the scheduler identity when
    it imports the cluster, so that identity must exist too."""

    id = "HPCLZ-STO-043"
    severity = Severity.ERROR
    title = "NetApp shared home needs storage.netapp mode new and the scheduler identity"
    fix = (
        "Set storage.netapp mode: new (a capacity pool with room for home_gib + sched_gib) and "
        "identity.managed_identities.scheduler: true, or use storage.shared mode: azure_files."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        shared = ctx.config.storage.shared
        if not isinstance(shared, NetAppShared):
            return
        netapp = ctx.config.storage.netapp
        if netapp.mode != "new":
            yield self.finding(ctx, (*SHARED, "mode"), f"mode netapp needs storage.netapp mode new, not {netapp.mode}")
        elif any(v.name in ("hpclz-home", "hpclz-sched") for v in netapp.volumes):
            yield self.finding(
                ctx, (*NETAPP, "volumes"), "volume names hpclz-home and hpclz-sched are taken by storage.shared"
            )
        if not ctx.config.identity.managed_identities.scheduler:
            yield self.finding(
                ctx,
                (*SHARED, "mode"),
                "identity.managed_identities.scheduler is false: nothing can read the volumes' mount addresses",
            )


# Archive is offered on LRS, GRS and RA-GRS accounts only
# (MicrosoftDocs/azure-docs@0089f18:articles/storage/blobs/access-tiers-overview.md).
ARCHIVE_REDUNDANCY = {"LRS", "GRS"}


class ArchiveTierRedundancy(Rule[ConfigContext]):
    """The Archive tier exists on LRS, GRS and RA-GRS accounts only
    (MicrosoftDocs/azure-docs@0089f18:articles/storage/blobs/access-tiers-overview.md): a lifecycle rule that
    tiers to Archive on a ZRS or GZRS account fails for every blob it matches."""

    id = "HPCLZ-STO-013"
    severity = Severity.ERROR
    title = "Lifecycle tiers to Archive on an account whose redundancy has no Archive tier"
    fix = "Set storage.blob.replication to GRS (or LRS), or drop lifecycle.archive_after_days."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode == "new" and blob.lifecycle.archive_after_days and blob.replication not in ARCHIVE_REDUNDANCY:
            yield self.finding(
                ctx,
                ("storage", "blob", "lifecycle", "archive_after_days"),
                f"Archive is not available on {blob.replication} accounts (only LRS, GRS, RA-GRS)",
            )


class LustreHsmPrincipal(Rule[ConfigContext]):
    """Managed Lustre with HSM needs Storage Account Contributor and Storage Blob Data Contributor on the
    account for the "HPC Cache Resource Provider" service principal before the file system is created, or
    creation fails and validation does not catch it
    (MicrosoftDocs/azure-stack-docs@f1e86c5:azure-managed-lustre/amlfs-prerequisites.md). That principal's
    object ID differs per tenant: `az ad sp list --display-name "HPC Cache Resource Provider" --query [].id`."""

    id = "HPCLZ-STO-014"
    severity = Severity.ERROR
    title = "Managed Lustre HSM without the HPC Cache Resource Provider's object ID"
    fix = "Set storage.lustre.hsm.resource_provider_object_id to the tenant's HPC Cache Resource Provider ID."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        lustre = ctx.config.storage.lustre
        if lustre.mode == "new" and lustre.hsm is not None and lustre.hsm.resource_provider_object_id is None:
            yield self.finding(
                ctx,
                ("storage", "lustre", "hsm"),
                "the HSM roles cannot be granted: the HPC Cache Resource Provider's object ID is not set",
            )


class StateInZoneAccount(Rule[ConfigContext]):
    """`hpclz deploy` reads and writes its state from the machine it runs on, a workstation outside the landing
    zone's VNet unless the team runs it from inside. No storage account the zone creates lets that machine in: each
    has networkAcls defaultAction Deny with no IP rules, and all but the flow-log account also disable public network
    access (templates/arm/storage/main.json.j2, templates/arm/flowlogs/main.json.j2), and Azure Storage answers a call
    from outside its rules 403 AuthorizationFailure (learn.microsoft.com/azure/storage/common/storage-network-security;
    learn.microsoft.com/rest/api/storageservices/blob-service-error-codes). The zone's first deploy would also have to
    keep its state in an account that only that deploy creates."""

    id = "HPCLZ-STO-070"
    severity = Severity.ERROR
    title = "State kept in a storage account this landing zone creates"
    fix = "Point state.account_url at an account outside the landing zone that the deploying machine reaches."

    # The zone's storage accounts by their name parts (render.zone, render.flowlogs) and what each is for.
    ACCOUNTS = (
        ((), "storage.blob"),
        ((CYCLECLOUD_LABEL,), "CycleCloud's locker"),
        (("nfs",), "storage.shared"),
        (("flow",), "network flow logs"),
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        state = ctx.config.state
        if state.backend != "azure_blob":
            return
        account = (urlsplit(state.account_url).hostname or "").split(".")[0].lower()
        for parts, purpose in self.ACCOUNTS:
            if ctx.names.name("storage_account", *parts) == account:
                yield self.finding(
                    ctx,
                    ("state", "account_url"),
                    f"{account} is the zone's own account for {purpose}: it refuses every caller outside the zone's "
                    "network, so deploy could not read or write its state there",
                )


STORAGE_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    LustreCapacityValid,
    LustreHsmContainerExists,
    NetAppQuotasFitPool,
    NetAppVolumeSize,
    GlobalNamesValid,
    CheckpointVersioning,
    StorageSubnetsPresent,
    NoPublicBlobAccess,
    ScratchSourceAvailable,
    ScratchOnEveryPartition,
    ProdCheckpointRedundancy,
    MountPointsDistinct,
    NewFileSystemsNeedComputeIdentity,
    SharedShareSize,
    SharedNeedsPrivateEndpoint,
    SharedMountHidesNothing,
    SharedNetAppNeedsPool,
    ArchiveTierRedundancy,
    LustreHsmPrincipal,
    StateInZoneAccount,
)
