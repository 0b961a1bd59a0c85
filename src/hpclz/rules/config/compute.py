"""Compute rules: VM sizes against the catalog, GPUs, InfiniBand, spot, Slurm partitions, quota, NVMe, images."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from hpclz.catalog.quota import quota_needs
from hpclz.catalog.versions import (
    CURRENT,
    PROJECT_BLOBS,
    describe_supported,
    find,
    marketplace_image,
    release_order,
    renderable,
    slurm_major,
)
from hpclz.config.compute import ExistingAccounting, NewAccounting
from hpclz.config.identity import NewKeyVault
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

PARTS = ("compute", "partitions")
# PartitionName=DEFAULT sets defaults in slurm.conf; login and scheduler are CycleCloud's own node(array) names.
RESERVED_PARTITION_NAMES = {"default", "login", "scheduler"}


def _unknown(ctx: ConfigContext, size: str) -> str:
    close = ctx.catalog.similar(size)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return f"{size} is not in hpclz's SKU catalog ({hint}Azure checks it live before deploy, HPCLZ-CMP-101)"


class PartitionSizeKnown(Rule[ConfigContext]):
    """Every other compute rule reasons from the catalog's facts; an unknown size is usually a typo. A warning, not
    an error: Azure adds sizes faster than the catalog, and deploy checks the size against the live Resource SKUs
    API (HPCLZ-CMP-101) before anything is created."""

    id = "HPCLZ-CMP-001"
    severity = Severity.WARNING
    title = "Partition VM size is not in the SKU catalog"
    fix = (
        "Check the spelling and version suffix (az vm list-skus --location <region> --size <size>); "
        "a size newer than hpclz's catalog is fine: deploy checks it live."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, partition, sku in ctx.partitions():
            if sku is None:
                yield self.finding(
                    ctx, (*PARTS, i, "vm_size"), f"partition {partition.name}: {_unknown(ctx, partition.vm_size)}"
                )


class ServiceSizesKnown(Rule[ConfigContext]):
    """The scheduler, login nodes and CycleCloud server must be real sizes too; checked live at deploy like CMP-001."""

    id = "HPCLZ-CMP-002"
    severity = Severity.WARNING
    title = "Scheduler, login or CycleCloud VM size is not in the SKU catalog"
    fix = "Use a general-purpose size such as Standard_D8as_v5 or Standard_E8as_v5."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for role, size, _ in ctx.config.compute.service_vms():
            if ctx.catalog.sku(size) is None:
                yield self.finding(ctx, ("compute", role, "vm_size"), f"{role}: {_unknown(ctx, size)}")


class GpuPartitionHasGpus(Rule[ConfigContext]):
    """`gpu_clocks: max` only means something on a GPU; on a CPU size the partition cannot do what was meant."""

    id = "HPCLZ-CMP-003"
    severity = Severity.ERROR
    title = "GPU partition uses a size without GPUs"
    fix = "Pick a GPU size (ND/NC series) or drop gpu_clocks: max."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, partition, sku in ctx.partitions():
            if sku is not None and partition.gpu_clocks == "max" and not sku.is_gpu:
                yield self.finding(
                    ctx,
                    (*PARTS, i, "vm_size"),
                    f"partition {partition.name} sets gpu_clocks: max but {sku.name} has no GPUs",
                )


class InfinibandCapable(Rule[ConfigContext]):
    """Only the RDMA sizes (HB, HC, HX, ND with `r` in the name) carry an InfiniBand adapter."""

    id = "HPCLZ-CMP-004"
    severity = Severity.ERROR
    title = "InfiniBand requested on a size without RDMA"
    fix = "Choose an RDMA-capable size (e.g. Standard_HB176rs_v4, Standard_ND96isr_H100_v5) or set infiniband: false."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, partition, sku in ctx.partitions():
            if sku is not None and partition.infiniband and not sku.rdma:
                yield self.finding(
                    ctx, (*PARTS, i, "infiniband"), f"partition {partition.name}: {sku.name} has no InfiniBand adapter"
                )


class MultiNodeGpuWithoutInfiniband(Rule[ConfigContext]):
    """NCCL between nodes falls back to TCP over the Ethernet NIC without InfiniBand: all-reduce across nodes
    runs an order of magnitude slower (seed 003: use InfiniBand for multi-node training)."""

    id = "HPCLZ-CMP-005"
    severity = Severity.WARNING
    title = "Multi-node GPU partition without InfiniBand"
    fix = "Set infiniband: true on an RDMA GPU size (ND…r…), or cap max_nodes at 1 for single-node jobs."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, partition, sku in ctx.partitions():
            if sku is None or not sku.is_gpu or partition.max_nodes <= 1 or partition.infiniband:
                continue
            hint = "set infiniband: true" if sku.rdma else f"{sku.name} has no InfiniBand; choose an ND…r… size"
            yield self.finding(
                ctx,
                (*PARTS, i, "infiniband"),
                f"partition {partition.name} spans up to {partition.max_nodes} GPU nodes without InfiniBand; "
                f"NCCL across nodes will crawl ({hint})",
            )


class SingleNodeInfiniband(Rule[ConfigContext]):
    """An InfiniBand size in a partition capped at one node pays for a fabric it never uses (seed 000: consider
    InfiniBand only for the jobs that need the bandwidth)."""

    id = "HPCLZ-CMP-006"
    severity = Severity.INFO
    title = "InfiniBand size in a single-node partition"
    fix = "Use a non-RDMA size of the same family (e.g. NC-series) if jobs never span nodes."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, partition, sku in ctx.partitions():
            if sku is not None and sku.rdma and partition.max_nodes == 1:
                yield self.finding(
                    ctx,
                    (*PARTS, i, "max_nodes"),
                    f"partition {partition.name} is capped at 1 node but {sku.name} carries "
                    f"{sku.infiniband.describe() if sku.infiniband else 'InfiniBand'} it cannot use",
                )


class InfinibandPartitionFitsOnePlacementGroup(Rule[ConfigContext]):
    """An InfiniBand partition is one CycleCloud nodearray with `Azure.SinglePlacementGroup = true` and
    `Azure.MaxScalesetSize` = hpclz.render.cloudinit.scaleset_size (templates/cyclecloud/slurm-cluster.txt.j2). A
    scale set in one placement group holds at most 100 VMs ("When true this limits the scale set to a single placement
    group, of max size 100 virtual machines", learn.microsoft.com/dotnet/api/azure.resourcemanager.compute.models.
    virtualmachinescalesetproperties.singleplacementgroup; learn.microsoft.com/azure/virtual-machine-scale-sets/
    virtual-machine-scale-sets-placement-groups), and CycleCloud puts the nodes past MaxScalesetSize into another
    scale set (learn.microsoft.com/azure/cyclecloud/cluster-references/node-nodearray-reference, MaxScalesetSize;
    the stock template's hpc array sets it from HPCMaxScalesetSize, default 100, Azure/cyclecloud-slurm@b26ab06
    templates/slurm.txt). The InfiniBand fabric reaches the RDMA VMs of one scale set in a single placement group
    (learn.microsoft.com/azure/virtual-machines/setup-infiniband), so a partition larger than one scale set is two
    or more fabrics, and a job spanning them cannot run MPI or NCCL over one InfiniBand fabric.
    A warning: smaller jobs still fit one scale set, and some sites want the capacity."""

    id = "HPCLZ-CMP-019"
    severity = Severity.WARNING
    title = "An InfiniBand partition is larger than one scale set (placement group)"
    fix = (
        "Cap max_nodes at one placement group (100 VMs; 90 for ND GB200/GB300 v6, five racks of 18), or split the "
        "nodes into partitions of at most that size so each job stays on one InfiniBand fabric."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        # Imported here: hpclz.render.cloudinit loads render's ARM tables (hpclz.arm), which the commands that only
        # load these rules (deploy and verify, before their config is read) never need.
        from hpclz.render.cloudinit import scaleset_size

        for i, partition, _sku in ctx.partitions():
            if not partition.infiniband:
                continue
            per_set = scaleset_size(partition)
            if partition.max_nodes <= per_set:
                continue
            sets = -(-partition.max_nodes // per_set)
            yield self.finding(
                ctx,
                (*PARTS, i, "max_nodes"),
                f"partition {partition.name}: {partition.max_nodes} nodes is {sets} scale sets of at most {per_set} "
                f"(one placement group each), so {sets} InfiniBand fabrics; a job of more than {per_set} nodes "
                "cannot span them on one fabric",
            )


class SpotNeedsCheckpoints(Rule[ConfigContext]):
    """Spot nodes are evicted at 30 seconds' notice; without checkpoint storage the work since the last
    checkpoint is lost each time (seed 003). Checkpoint storage: a blob container with purpose checkpoints, or Lustre."""

    id = "HPCLZ-CMP-007"
    severity = Severity.WARNING
    title = "Spot partition without checkpoint storage"
    fix = "Add a blob container with purpose: checkpoints (or a Lustre file system) and checkpoint jobs to it."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.has_checkpoint_container or ctx.config.storage.lustre.mode != "disabled":
            return
        for i, partition, _ in ctx.partitions():
            if partition.priority == "spot":
                yield self.finding(
                    ctx,
                    (*PARTS, i, "priority"),
                    f"spot partition {partition.name} has no checkpoint storage to resume from after eviction",
                )


class PartitionNamesUsable(Rule[ConfigContext]):
    """Slurm partition and CycleCloud nodearray names must be unique; `default` is a slurm.conf keyword and
    `login`/`scheduler` are CycleCloud's own names."""

    id = "HPCLZ-CMP-008"
    severity = Severity.ERROR
    title = "Partition name duplicated or reserved"
    fix = "Give every partition its own name, other than default, login or scheduler."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        counts = Counter(p.name for p in ctx.config.compute.partitions)
        for i, partition, _ in ctx.partitions():
            if partition.name in RESERVED_PARTITION_NAMES:
                yield self.finding(ctx, (*PARTS, i, "name"), f"partition name {partition.name!r} is reserved")
            elif counts[partition.name] > 1:
                yield self.finding(
                    ctx, (*PARTS, i, "name"), f"partition name {partition.name!r} is used more than once"
                )


class OneDefaultPartition(Rule[ConfigContext]):
    """Slurm sends jobs without -p to the default partition: two defaults are ambiguous, none makes such jobs fail."""

    id = "HPCLZ-CMP-009"
    severity = Severity.ERROR
    title = "Not exactly one default partition"
    fix = "Set default: true on exactly one partition."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        defaults = [i for i, p, _ in ctx.partitions() if p.default]
        if len(defaults) > 1:
            names = ", ".join(ctx.config.compute.partitions[i].name for i in defaults)
            yield self.finding(ctx, (*PARTS, defaults[1], "default"), f"partitions {names} are all marked default")
        elif not defaults:
            yield self.finding(
                ctx,
                PARTS,
                "no partition is marked default; jobs submitted without -p will be rejected",
                severity=Severity.WARNING,
            )


def _family_totals(ctx: ConfigContext) -> dict[str, tuple[int, list[str]]]:
    """vCPUs each quota family needs at full scale (hpclz.catalog.quota, which `hpclz plan` shows too)."""
    return {need.family: (need.vcpus, need.users) for need in quota_needs(ctx.config, ctx.catalog)}


class QuotaReport(Rule[ConfigContext]):
    """Deployment stalls when a family's regional vCPU quota is short; knowing the number early lets you file
    the quota request before the deploy (live usage is checked by preflight, not here)."""

    id = "HPCLZ-CMP-010"
    severity = Severity.INFO
    repeats = True
    title = "vCPUs needed per quota family"
    fix = "Make sure the subscription's quota covers these totals (az vm list-usage), and declare it in compute.quotas."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        declared = {k.lower(): v for k, v in ctx.config.compute.quotas.items()}
        parts = []
        for family, (total, users) in sorted(_family_totals(ctx).items()):
            quota = declared.get(family.lower())
            against = f"of {quota} declared" if quota is not None else "no quota declared"
            parts.append(f"{family} {total} ({against}; {', '.join(users)})")
        if parts:
            yield self.finding(
                ctx, ("compute", "partitions"), "vCPUs at full scale per quota family: " + "; ".join(parts)
            )


class QuotaExceeded(Rule[ConfigContext]):
    """A declared quota smaller than what the partitions need at max_nodes means the cluster can never reach
    full size: Azure refuses allocations past the quota."""

    id = "HPCLZ-CMP-011"
    severity = Severity.ERROR
    title = "Declared quota is smaller than the vCPUs needed"
    fix = "Lower max_nodes, or request more quota and update compute.quotas."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        declared = {k.lower(): (k, v) for k, v in ctx.config.compute.quotas.items()}
        for family, (total, users) in sorted(_family_totals(ctx).items()):
            key, quota = declared.get(family.lower(), (None, None))
            if key is not None and quota is not None and total > quota:
                yield self.finding(
                    ctx,
                    ("compute", "quotas", key),
                    f"{family} needs {total} vCPUs ({', '.join(users)}) but the declared quota is {quota}",
                )


class QuotaFamilyUsed(Rule[ConfigContext]):
    """A declared quota for a family no VM uses is usually a misspelt family name, so the real one goes unchecked."""

    id = "HPCLZ-CMP-012"
    severity = Severity.WARNING
    title = "Declared quota names a family no VM uses"
    fix = "Spell the family as Azure does (see `az vm list-usage`); the catalog's quota_family per size lists them."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        used = {f.lower() for f in _family_totals(ctx)}
        for key in ctx.config.compute.quotas:
            if key.lower() not in used:
                yield self.finding(
                    ctx, ("compute", "quotas", key), f"quota family {key} is not used by any VM of this landing zone"
                )


class NvmeScratchNeedsNvme(Rule[ConfigContext]):
    """NVMe scratch stripes the size's local NVMe disks at boot; on a size without them node setup fails."""

    id = "HPCLZ-CMP-013"
    severity = Severity.ERROR
    title = "NVMe scratch on a size without local NVMe"
    fix = "Remove nvme_scratch from the partition or choose a size with local NVMe disks."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, partition, sku in ctx.partitions():
            if sku is not None and partition.active_nvme_scratch and sku.nvme_disks == 0:
                yield self.finding(
                    ctx, (*PARTS, i, "nvme_scratch"), f"partition {partition.name}: {sku.name} has no local NVMe disks"
                )


class VerifyPartitionsExist(Rule[ConfigContext]):
    """`hpclz verify` runs on the partitions named in verify.partitions; a name that does not exist is a typo."""

    id = "HPCLZ-CMP-014"
    severity = Severity.ERROR
    title = "verify.partitions names an unknown partition"
    fix = "List only partitions defined under compute.partitions."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        names = {p.name for p in ctx.config.compute.partitions}
        for i, name in enumerate(ctx.config.verify.partitions):
            if name not in names:
                yield self.finding(
                    ctx, ("verify", "partitions", i), f"verify.partitions lists {name!r}, which is not a partition"
                )


ACCOUNTING = ("compute", "accounting")


class AccountingPasswordInVault(Rule[ConfigContext]):
    """slurmdbd's database password reaches the cluster only through Key Vault: hpclz stores
    identity.key_vault.secrets in the vault it creates, and the CycleCloud server reads the named secret when it
    imports the cluster (in mode new the same secret is also the server's administrator password, a secureString
    parameter at deploy). A name that is not among those secrets has no value to read, and the cluster import
    fails (Key Vault answers SecretNotFound,
    https://learn.microsoft.com/en-us/rest/api/keyvault/secrets/get-secret/get-secret)."""

    id = "HPCLZ-CMP-040"
    severity = Severity.ERROR
    title = "Accounting password secret is not stored by hpclz"
    fix = "Add the secret to identity.key_vault.secrets (mode: new), e.g. `slurmdb-password: ${env:SLURMDB_PASSWORD}`."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        accounting = ctx.config.compute.accounting
        if not isinstance(accounting, ExistingAccounting | NewAccounting):
            return
        vault = ctx.config.identity.key_vault
        if not isinstance(vault, NewKeyVault):
            yield self.finding(
                ctx,
                (*ACCOUNTING, "password_secret_name"),
                f"the password is read from the Key Vault hpclz creates, but identity.key_vault.mode is {vault.mode}",
            )
        elif accounting.password_secret_name not in vault.secrets:
            yield self.finding(
                ctx,
                (*ACCOUNTING, "password_secret_name"),
                f"secret {accounting.password_secret_name!r} is not among identity.key_vault.secrets",
            )


class AccountingNeedsSchedulerIdentity(Rule[ConfigContext]):
    """The CycleCloud server runs as the scheduler managed identity; hpclz grants that identity Key Vault Secrets
    User so it can read the accounting password. Without the identity nothing can read it."""

    id = "HPCLZ-CMP-041"
    severity = Severity.ERROR
    title = "Accounting needs the scheduler managed identity"
    fix = "Set identity.managed_identities.scheduler: true, or turn compute.accounting off."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.config.compute.accounting.mode != "disabled" and not ctx.config.identity.managed_identities.scheduler:
            yield self.finding(
                ctx,
                (*ACCOUNTING, "mode"),
                "identity.managed_identities.scheduler is false: no identity can read "
                "the accounting password from Key Vault",
            )


class AccountingPasswordOnSched(Rule[ConfigContext]):
    """cyclecloud-slurm 4.0.9 writes slurmdbd's database password in clear into /sched/<cluster>/slurmdbd.conf
    (`StoragePass=`, owner slurm, `chmod 600`) and links /etc/slurm/slurmdbd.conf to it
    (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py l.139 config_dir = f"/sched/{...}", l.417-436,
    l.470-476; installlib.py l.127-135, l.200-225). Neither the folder nor the password's source is a setting: the
    password comes only from slurm.accounting.password (install.py l.98). hpclz mounts /sched on every node
    (cyclecloud.mounts.nfs_sched in [[node defaults]]) from a share or export without root squash, which the scheduler
    needs to chown the munge key there (HPCLZ-TPL-055's docstring; Microsoft.Storage 2023-05-01 rootSquash: "The
    default is NoRootSquash"; the built-in export's options = no_root_squash). So root on any node of the cluster,
    login and portal included, can read the MySQL login that slurmdbd uses; users without root cannot (mode 600).
    hpclz cannot remove this with a documented setting, so it says so."""

    id = "HPCLZ-CMP-047"
    severity = Severity.INFO
    title = "Slurm accounting password is readable by root on every node that mounts /sched"
    fix = (
        "Give root on the cluster's nodes only to those who may hold the accounting database login, keep the MySQL "
        "server reachable from the cluster's subnets alone, and rotate the secret when a node's root was shared: set "
        "the new value, `hpclz plan`, `hpclz deploy` (it rewrites StoragePass in the scheduler's slurmdbd.conf and "
        'restarts slurmdbd; docs/cluster-services.md, "Rotating the password").'
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.config.compute.accounting.mode != "disabled":
            yield self.finding(
                ctx,
                (*ACCOUNTING, "mode"),
                "cyclecloud-slurm writes the database password into /sched/<cluster>/slurmdbd.conf (mode 600, "
                "owner slurm); /sched has no root squash, so root on any node that mounts it can read it",
            )


class SupportedClusterVersions(Rule[ConfigContext]):
    """CycleCloud, cyclecloud-slurm and Slurm ship as a strict triple: an unlisted Slurm build leaves the nodes
    without Slurm (Azure/cyclecloud-slurm-workspace#141 and #346). hpclz renders only the rows of
    `hpclz.catalog.versions.STACK` it can build (current and stepping stone, each with its source); the older rows
    are upgrade sources that `hpclz plan` walks from, never a target."""

    id = "HPCLZ-CMP-017"
    severity = Severity.ERROR
    title = "CycleCloud, cyclecloud-slurm and Slurm versions are not a supported triple"
    fix = (
        f"Use compute.cyclecloud {{version: {CURRENT.cyclecloud}, slurm_project_version: {CURRENT.project}, "
        f"slurm_version: {CURRENT.slurm}}}; `hpclz plan` lists the upgrade steps from a deployed older triple."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        cc = ctx.config.compute.cyclecloud
        where = ("compute", "cyclecloud")
        row = find(cc.version, cc.slurm_project_version, cc.slurm_version)
        if row is not None and row.renderable:
            return
        if row is not None:
            yield self.finding(
                ctx,
                (*where, "version"),
                f"{row.describe()} is only an upgrade source (Slurm {slurm_major(row.slurm)} is past SchedMD "
                f"support); hpclz renders {describe_supported()}",
            )
            return
        field = _first_unknown(cc.version, cc.slurm_project_version)
        yield self.finding(
            ctx,
            (*where, field),
            f"CycleCloud {cc.version} + cyclecloud-slurm {cc.slurm_project_version} + Slurm {cc.slurm_version} is "
            f"not a triple hpclz supports ({describe_supported()})",
        )


class SlurmProjectDigests(Rule[ConfigContext]):
    """The cyclecloud-slurm release that hpclz-cluster-sync fetches from GitHub and uploads to the locker, and that
    every node then installs as root, is checked against compute.cyclecloud.slurm_project_sha256 when that names the
    files: a swapped or truncated asset is never uploaded. The digests must cover exactly the release's files
    (project.ini [blobs] Files: Azure/cyclecloud-slurm@50e6739:project.ini:7-8 for 4.0.9), or the sync would refuse
    a good release. hpclz ships no digests (no public source it could read states them), so an empty map is allowed:
    the first fetch is then trusted as GitHub serves it over TLS, and recorded (HPCLZ-CMP-021 warns). To pin, take
    the digests the server recorded at that first fetch (the locker's hpclz/cyclecloud-slurm-<version>.sha256.json,
    or the "recorded" lines of /var/log/hpclz-cluster-sync.log on the server; `hpclz deploy` prints the command),
    check them against `sha256sum` of each asset downloaded from the release page, and set them here."""

    id = "HPCLZ-CMP-018"
    severity = Severity.ERROR
    title = "cyclecloud-slurm release files not pinned by SHA-256, or pinned wrongly"
    fix = (
        "Set compute.cyclecloud.slurm_project_sha256 to {file: sha256} for every file of the release's assets: the "
        "digests the server recorded at its first fetch (the locker's hpclz/cyclecloud-slurm-<version>.sha256.json; "
        "`hpclz deploy` prints how to read it), checked against sha256sum of each download from "
        "github.com/Azure/cyclecloud-slurm/releases/<version>."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        cc = ctx.config.compute.cyclecloud
        path = ("compute", "cyclecloud", "slurm_project_sha256")
        files = PROJECT_BLOBS.get(cc.slurm_project_version)
        if not cc.slurm_project_sha256 or files is None:
            return  # nothing pinned (docs/cluster-services.md says what that trusts), or a release not read here
        missing = sorted(set(files) - set(cc.slurm_project_sha256))
        extra = sorted(set(cc.slurm_project_sha256) - set(files))
        if missing or extra:
            said = [f"no digest for {', '.join(missing)}"] if missing else []
            said += [f"{', '.join(extra)} is not a file of the release"] if extra else []
            yield self.finding(
                ctx, path, f"cyclecloud-slurm {cc.slurm_project_version}: {'; '.join(said)} ({', '.join(files)})"
            )


class SlurmProjectTrustedOnFirstUse(Rule[ConfigContext]):
    """With compute.cyclecloud.slurm_project_sha256 empty, nothing checks the cyclecloud-slurm release that the
    CycleCloud server fetches from GitHub before it becomes the cluster-init every node runs as root, except the record
    of its own first fetch: hpclz-cluster-sync writes each file's SHA-256 to the locker (hpclz container,
    cyclecloud-slurm-<version>.sha256.json) the first time any server fetches that release, and refuses a later fetch
    that differs (templates/cloud-init/cluster_sync.py `recorded`). What that first fetch got is trusted as GitHub
    served it over TLS. hpclz ships no digests: no public source it could read states them (HPCLZ-CMP-018). A
    warning: the record still catches a release that changes after the first deploy."""

    id = "HPCLZ-CMP-021"
    severity = Severity.WARNING
    title = "cyclecloud-slurm release trusted on first fetch: no SHA-256 pinned"
    fix = (
        "After the first deploy, read the digests the server recorded (`hpclz deploy` prints the command; or on the "
        "server: sudo grep recorded /var/log/hpclz-cluster-sync.log), check them against sha256sum of each asset "
        "downloaded from github.com/Azure/cyclecloud-slurm/releases/<version>, and set them in "
        "compute.cyclecloud.slurm_project_sha256."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        # Imported here, as in HPCLZ-CMP-019: hpclz.render.cloudinit loads hpclz.arm.
        from hpclz.render.cloudinit import project_record_blob

        cc = ctx.config.compute.cyclecloud
        if cc.slurm_project_sha256:
            return
        files = PROJECT_BLOBS.get(cc.slurm_project_version)
        what = f" ({', '.join(files)})" if files else ""
        # The record is written with CycleCloud's identity (hpclz.render.cloudinit, project_record): without it,
        # every fetch is trusted as GitHub serves it.
        trusted = (
            "the first fetch from GitHub is trusted and recorded in the locker's "
            f"hpclz/{project_record_blob(cc.slurm_project_version)}, and later fetches are checked against it"
            if ctx.config.identity.managed_identities.scheduler
            else "every fetch from GitHub is trusted as it comes (without identity.managed_identities.scheduler the "
            "server keeps no record to check a later fetch against)"
        )
        yield self.finding(
            ctx,
            ("compute", "cyclecloud", "slurm_project_sha256"),
            f"cyclecloud-slurm {cc.slurm_project_version}'s files{what}, which every node installs as root, are "
            f"pinned by no SHA-256: {trusted}",
        )


class ServerImageRelease(Rule[ConfigContext]):
    """The CycleCloud server boots the Marketplace image of the release it was created from (`image_release`) and
    upgrades the cyclecloud8 package in place to `version`, keeping its database
    (learn.microsoft.com/azure/cyclecloud/how-to/upgrade-and-migrate, "You can upgrade the Azure CycleCloud
    application in place"). The image must be one hpclz knows, and never of a newer release than `version`: CycleCloud
    upgrades only forward, and a package older than the image is a downgrade nobody documents."""

    id = "HPCLZ-CMP-020"
    severity = Severity.ERROR
    title = "CycleCloud's image release is unknown or newer than the release it runs"
    fix = (
        "Set compute.cyclecloud.image_release to the release the server was created from (at most `version`), "
        "or leave it unset for a new server."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        cc = ctx.config.compute.cyclecloud
        if cc.image_release is None or cc.image is not None:
            return
        where = ("compute", "cyclecloud", "image_release")
        if marketplace_image(cc.image_release) is None:
            yield self.finding(ctx, where, f"hpclz knows no CycleCloud Marketplace image of {cc.image_release}")
        elif release_order(cc.image_release) > release_order(cc.version):
            yield self.finding(
                ctx, where, f"the image's CycleCloud {cc.image_release} is newer than the {cc.version} it would run"
            )


def _first_unknown(cyclecloud: str, project: str) -> str:
    """The field to point at: the first one no renderable row matches with the fields before it."""
    rows = renderable()
    if not any(r.cyclecloud == cyclecloud for r in rows):
        return "version"
    if not any(r.cyclecloud == cyclecloud and r.project == project for r in rows):
        return "slurm_project_version"
    return "slurm_version"


class ContainersComeWithTheProject(Rule[ConfigContext]):
    """cyclecloud-slurm 4.0.x installs enroot and pyxis and configures them (per-user paths, the plugstack include)
    on every Ubuntu and AlmaLinux 8 node, with no setting to leave them out
    (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py:929-997, called at :726 for every role by
    complete_install, :481-487). A partition that asks for no containers would still get them: say so instead of
    pretending."""

    id = "HPCLZ-CMP-060"
    severity = Severity.ERROR
    title = "Containers cannot be switched off on a cyclecloud-slurm 4.0 partition"
    fix = "Set compute.partitions[].containers to {enroot: true, pyxis: true} (or drop it): the project installs both."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, p in enumerate(ctx.config.compute.partitions):
            for name in ("enroot", "pyxis"):
                if not getattr(p.containers, name):
                    yield self.finding(
                        ctx,
                        (*PARTS, i, "containers", name),
                        f"partition {p.name}: cyclecloud-slurm {ctx.config.compute.cyclecloud.slurm_project_version} "
                        f"installs {name} on every node; it cannot be left out",
                    )


# learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndh100v5-series: "Due to increased GPU memory
# I/O footprint, the ND H100 v5 requires the use of Generation 2 VMs and marketplace images." Other catalog sizes
# are left out until their series page is read for the same statement.
GEN2_ONLY_SIZES = frozenset({"Standard_ND96isr_H100_v5"})


class CustomImageGeneration(Rule[ConfigContext]):
    """A size that boots only Generation 2 images fails to start from a Generation 1 image definition, and the
    generation of a gallery image is fixed when its definition is created (hyperVGeneration). Offline this is a
    reminder; `hpclz deploy` reads the definition and refuses a V1 one (HPCLZ-CMP-106)."""

    id = "HPCLZ-CMP-015"
    severity = Severity.INFO
    title = "Custom image on a size that boots only Generation 2 images"
    fix = (
        "Check `az sig image-definition show ... --query hyperVGeneration` is V2 (or use a Gen2 marketplace "
        "image such as microsoft-dsvm:ubuntu-hpc:2204:latest); deploy checks it (HPCLZ-CMP-106)."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for path, who, size, _ in ctx.config.compute.custom_images():
            if size in GEN2_ONLY_SIZES:
                yield self.finding(
                    ctx,
                    path,
                    f"{who}: {size} boots only Generation 2 images; the custom image must be Gen2 (checked at deploy)",
                )


class CustomImageRegion(Rule[ConfigContext]):
    """A VM is created only from a gallery image version replicated to its region
    (learn.microsoft.com/azure/virtual-machines/shared-image-galleries: image versions are replicated to the
    target regions you list), and from a managed image only in the image's own region
    (learn.microsoft.com/azure/virtual-machines/capture-image-resource). Neither is visible offline; CycleCloud
    would fail the node only when it starts it, so the requirement is stated up front and `hpclz deploy` reads
    the image to check it (HPCLZ-CMP-105)."""

    id = "HPCLZ-CMP-016"
    severity = Severity.INFO
    title = "Custom image must be available in the landing zone's region"
    fix = (
        "Replicate the gallery image version to metadata.location (az sig image-version update "
        "--add publishingProfile.targetRegions name=<region>), or copy the managed image there."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        region = ctx.config.metadata.location
        for path, who, _, image in ctx.config.compute.custom_images():
            kind = "gallery image version" if "/galleries/" in image.lower() else "managed image"
            yield self.finding(ctx, path, f"{who}: the {kind} must be in (replicated to) {region}")


COMPUTE_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    PartitionSizeKnown,
    ServiceSizesKnown,
    GpuPartitionHasGpus,
    InfinibandCapable,
    MultiNodeGpuWithoutInfiniband,
    SingleNodeInfiniband,
    InfinibandPartitionFitsOnePlacementGroup,
    SpotNeedsCheckpoints,
    PartitionNamesUsable,
    OneDefaultPartition,
    QuotaReport,
    QuotaExceeded,
    QuotaFamilyUsed,
    NvmeScratchNeedsNvme,
    VerifyPartitionsExist,
    SupportedClusterVersions,
    ServerImageRelease,
    SlurmProjectDigests,
    SlurmProjectTrustedOnFirstUse,
    ContainersComeWithTheProject,
    CustomImageGeneration,
    CustomImageRegion,
    AccountingPasswordInVault,
    AccountingNeedsSchedulerIdentity,
    AccountingPasswordOnSched,
)
