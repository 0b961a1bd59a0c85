"""Shared home and /sched (storage.shared): share sizes, the private endpoint NFS needs, mounts that hide others."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath

from hpclz.config.storage import AzureFilesShared
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

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


SHARED_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    SharedShareSize,
    SharedNeedsPrivateEndpoint,
    SharedMountHidesNothing,
)
