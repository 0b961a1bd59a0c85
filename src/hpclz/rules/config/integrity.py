"""Checkpoint integrity rules: version-level immutability (WORM) and its retention on blob containers, and
point-in-time restore of the account's blobs.

Facts: learn.microsoft.com/azure/storage/blobs/immutable-version-level-worm-policies ("Version-level policies
require that blob versioning is enabled for the storage account"; not for hierarchical-namespace accounts), and
learn.microsoft.com/azure/storage/blobs/immutable-storage-overview (a blob version under an active retention
policy cannot be deleted, by a user or by lifecycle management).
"""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext
from hpclz.secretscan import ENV_REFERENCE

BLOB = ("storage", "blob")


class ImmutableNeedsVersioning(Rule[ConfigContext]):
    """Version-level immutability protects blob versions, so the account needs blob versioning; the container
    cannot be created with WORM support otherwise."""

    id = "HPCLZ-STO-050"
    severity = Severity.ERROR
    title = "Immutable container without blob versioning"
    fix = "Set versioning: true on every container with immutable: true."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode == "disabled":
            return
        for i, container in enumerate(blob.containers):
            if container.immutable and not container.versioning:
                yield self.finding(
                    ctx,
                    (*BLOB, "containers", i, "versioning"),
                    f"container {container.name} is immutable but unversioned: WORM applies to blob versions",
                )


class RetentionNeedsImmutability(Rule[ConfigContext]):
    """A time-based retention policy on a blob version is only accepted in a container with version-level
    immutability support (Set Blob Immutability Policy, learn.microsoft.com/rest/api/storageservices/
    set-blob-immutability-policy), so retention without it would fail at the first seal."""

    id = "HPCLZ-STO-051"
    severity = Severity.ERROR
    title = "Retention or lock asked of a container that is not immutable"
    fix = "Set immutable: true on the container, or remove retention_days and retention_locked."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode == "disabled":
            return
        for i, container in enumerate(blob.containers):
            if container.immutable:
                continue
            for key in ("retention_days", "retention_locked"):
                if getattr(container, key):
                    yield self.finding(
                        ctx, (*BLOB, "containers", i, key), f"container {container.name} sets {key} but not immutable"
                    )


class ImmutableOnlyWhereCreated(Rule[ConfigContext]):
    """WORM support is a property set when a container is created; hpclz creates containers only in the account
    it creates (storage.blob.mode: new), so on an existing account the setting would silently do nothing."""

    id = "HPCLZ-STO-052"
    severity = Severity.ERROR
    title = "Immutability asked of a container hpclz does not create"
    fix = "Enable version-level immutability on the existing container in Azure, and remove immutable: true here."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode != "existing":
            return
        for i, container in enumerate(blob.containers):
            if container.immutable:
                yield self.finding(
                    ctx,
                    (*BLOB, "containers", i, "immutable"),
                    f"container {container.name} is in an existing account: hpclz cannot make it immutable",
                )


class LifecycleDeleteBeforeRetention(Rule[ConfigContext]):
    """Lifecycle management cannot delete a blob version whose retention has not expired: a delete rule shorter
    than the retention fails on every sealed version until the retention ends, and the account keeps (and bills)
    what the config says is gone."""

    id = "HPCLZ-STO-053"
    severity = Severity.WARNING
    title = "Lifecycle deletes blobs before their immutability retention ends"
    fix = "Set storage.blob.lifecycle.delete_after_days to at least the longest retention_days, or drop it."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode != "new" or blob.lifecycle.delete_after_days is None:
            return
        delete = blob.lifecycle.delete_after_days
        for container in blob.containers:
            if container.immutable and container.retention_days and container.retention_days > delete:
                yield self.finding(
                    ctx,
                    (*BLOB, "lifecycle", "delete_after_days"),
                    f"blobs are deleted after {delete} days but container {container.name} retains sealed "
                    f"versions for {container.retention_days} days",
                )


class RestoreWithinSoftDelete(Rule[ConfigContext]):
    """Point-in-time restore replays deletions from soft-deleted data, so its window must be at least one day
    shorter than blob soft delete; ARM refuses the blob service otherwise.
    Source: learn.microsoft.com/azure/storage/blobs/point-in-time-restore-manage"""

    id = "HPCLZ-STO-054"
    severity = Severity.ERROR
    title = "Point-in-time restore window not shorter than soft delete"
    fix = "Set storage.blob.point_in_time_restore_days below soft_delete_days (or raise soft_delete_days)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode != "new" or blob.point_in_time_restore_days is None:
            return
        if blob.point_in_time_restore_days >= blob.soft_delete_days:
            yield self.finding(
                ctx,
                (*BLOB, "point_in_time_restore_days"),
                f"restore reaches back {blob.point_in_time_restore_days} days but soft delete keeps only "
                f"{blob.soft_delete_days}",
            )


class RestoreNeedsVersioning(Rule[ConfigContext]):
    """Point-in-time restore needs blob versioning on the account; hpclz turns account versioning on only when
    a container asks for it. Source: learn.microsoft.com/azure/storage/blobs/point-in-time-restore-manage"""

    id = "HPCLZ-STO-055"
    severity = Severity.ERROR
    title = "Point-in-time restore without blob versioning"
    fix = "Set versioning: true on at least one container, or remove point_in_time_restore_days."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode == "new" and blob.point_in_time_restore_days and not any(c.versioning for c in blob.containers):
            yield self.finding(
                ctx, (*BLOB, "point_in_time_restore_days"), "no container is versioned, so the account is not"
            )


class ManifestKeyIsAReference(Rule[ConfigContext]):
    """A signing key written into the config file travels with every copy of it (repositories, tickets, state
    snapshots), so whoever can read the config can forge a manifest; only a `${env:NAME}` reference is taken."""

    id = "HPCLZ-STO-056"
    severity = Severity.ERROR
    title = "Manifest signing key written into the config"
    fix = "Write manifest_key: ${env:NAME} and put the key in that environment variable (from Key Vault or CI)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        blob = ctx.config.storage.blob
        if blob.mode == "disabled":
            return
        for i, container in enumerate(blob.containers):
            key = container.manifest_key
            if key is not None and not ENV_REFERENCE.match(key.get_secret_value()):
                # The message never repeats the value: it is a secret.
                yield self.finding(
                    ctx, (*BLOB, "containers", i, "manifest_key"), f"container {container.name}: a literal key"
                )


INTEGRITY_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    ImmutableNeedsVersioning,
    RetentionNeedsImmutability,
    ImmutableOnlyWhereCreated,
    LifecycleDeleteBeforeRetention,
    RestoreWithinSoftDelete,
    RestoreNeedsVersioning,
    ManifestKeyIsAReference,
)
