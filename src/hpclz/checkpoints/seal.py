"""`hpclz checkpoints manifest|verify`: seal the checkpoint containers' blobs in a manifest, then prove them unchanged.

The containers are those the config marks `purpose: checkpoints` (or the one `--container` names). `verify`
exits 1 when a blob was modified, went missing or appeared, or when the manifest's signature does not hold.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field

from hpclz.azure.checkpoints import CheckpointStore
from hpclz.checkpoints.manifest import (
    Manifest,
    ManifestEntry,
    compare,
    is_manifest,
    manifest_blob,
    normalise_prefix,
    parse_manifest,
)
from hpclz.config.base import Disabled
from hpclz.config.root import LandingZoneConfig
from hpclz.config.storage import BlobContainer, ExistingBlob
from hpclz.errors import ExitCode, HpclzError
from hpclz.output import ResultBody
from hpclz.render.zone import Zone
from hpclz.secretscan import ENV_REFERENCE

Signature = Literal["valid", "invalid", "unsigned", "not-checked"]
Done = TypeVar("Done")


class SealedContainer(ResultBody):
    container: str
    manifest: str
    files: int
    signed: bool
    retained_until: datetime | None = None  # None: no retention policy set (immutable or retention_days unset)
    locked: bool = False


class ManifestResult(ResultBody):
    account_url: str
    containers: list[SealedContainer]


class ContainerCheck(ResultBody):
    container: str
    manifest: str
    sealed_at: datetime
    signature: Signature
    matched: int
    modified: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    unexpected: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        clean = not (self.modified or self.missing or self.unexpected)
        return clean and self.signature in ("valid", "not-checked")


class VerifyResult(ResultBody):
    account_url: str
    containers: list[ContainerCheck]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.containers)


@dataclass(frozen=True)
class CheckpointsOptions:
    config: Path
    prefix: str = ""  # only the blobs under it
    container: str | None = None  # this container, not those the config marks `purpose: checkpoints`
    credential: Any = None  # an azure-core TokenCredential; DefaultAzureCredential when None


def write_manifest(config: LandingZoneConfig, opts: CheckpointsOptions) -> ManifestResult:
    account_url, sealed = _per_container(config, opts, lambda store, spec: _seal(store, spec, opts.prefix))
    return ManifestResult(account_url=account_url, containers=sealed)


def _per_container(
    config: LandingZoneConfig,
    opts: CheckpointsOptions,
    action: Callable[[CheckpointStore, BlobContainer], Done],
) -> tuple[str, list[Done]]:
    """The account URL, and `action` done on each checkpoint container in turn (connected one at a time)."""
    account_url = checkpoint_account_url(config)
    done = []
    for spec in checkpoint_containers(config, opts.container):
        store = CheckpointStore.connect(account_url=account_url, container=spec.name, credential=opts.credential)
        done.append(action(store, spec))
    return account_url, done


def _seal(store: CheckpointStore, spec: BlobContainer, prefix: str) -> SealedContainer:
    """Hash, write the manifest, then put every hashed version and the manifest under the retention policy:
    the versions exactly as hashed, so a blob overwritten meanwhile is caught by verify, not sealed unseen."""
    key = signing_key(spec)
    found = list(store.digests(normalise_prefix(prefix), skip=is_manifest))
    manifest = Manifest(
        container=spec.name,
        prefix=normalise_prefix(prefix),
        created_at=datetime.now(UTC),
        files={d.name: ManifestEntry(sha256=d.sha256, size=d.size) for d in found},
    )
    if key is not None:
        manifest = manifest.signed(key)
    name = manifest_blob(prefix)
    version = store.write_text(name, manifest.to_text())
    until = None
    if spec.immutable and spec.retention_days:
        until = manifest.created_at + timedelta(days=spec.retention_days)
        for digest in found:
            store.seal(digest.name, digest.version_id, until=until, locked=spec.retention_locked)
        store.seal(name, version, until=until, locked=spec.retention_locked)
    return SealedContainer(
        container=spec.name,
        manifest=name,
        files=len(found),
        signed=key is not None,
        retained_until=until,
        locked=bool(until and spec.retention_locked),
    )


def verify_checkpoints(config: LandingZoneConfig, opts: CheckpointsOptions) -> VerifyResult:
    account_url, checks = _per_container(config, opts, lambda store, spec: _check(store, spec, opts.prefix))
    return VerifyResult(account_url=account_url, containers=checks)


def _check(store: CheckpointStore, spec: BlobContainer, prefix: str) -> ContainerCheck:
    key = signing_key(spec)  # a missing key variable is a usage error before any storage call
    name = manifest_blob(prefix)
    text = store.read_text(name)
    if text is None:
        raise HpclzError(
            f"no manifest at {spec.name}/{name}",
            exit_code=ExitCode.FAILED,
            hint="write one first: hpclz checkpoints manifest CONFIG" + (f" --prefix {prefix}" if prefix else ""),
        )
    manifest = parse_manifest(text, f"{spec.name}/{name}")
    diff = compare(manifest.files, _digests(store, prefix))
    return ContainerCheck(
        container=spec.name,
        manifest=name,
        sealed_at=manifest.created_at,
        signature=_signature(manifest, key),
        matched=diff.matched,
        modified=diff.modified,
        missing=diff.missing,
        unexpected=diff.unexpected,
    )


def _signature(manifest: Manifest, key: bytes | None) -> Signature:
    if key is None:
        return "not-checked"
    if manifest.signature is None:
        return "unsigned"
    return "valid" if manifest.signature_valid(key) else "invalid"


def _digests(store: CheckpointStore, prefix: str) -> dict[str, ManifestEntry]:
    found = store.digests(normalise_prefix(prefix), skip=is_manifest)
    return {d.name: ManifestEntry(sha256=d.sha256, size=d.size) for d in found}


def checkpoint_containers(config: LandingZoneConfig, only: str | None) -> list[BlobContainer]:
    blob = config.storage.blob
    if isinstance(blob, Disabled):
        raise HpclzError("storage.blob is disabled: there are no checkpoint containers", exit_code=ExitCode.USAGE)
    if only is not None:
        chosen = [c for c in blob.containers if c.name == only]
        if not chosen:
            known = ", ".join(c.name for c in blob.containers)
            raise HpclzError(f"--container {only}: not in storage.blob.containers ({known})", exit_code=ExitCode.USAGE)
        return chosen
    chosen = [c for c in blob.containers if c.purpose == "checkpoints"]
    if not chosen:
        raise HpclzError(
            "storage.blob.containers: none has purpose: checkpoints",
            exit_code=ExitCode.USAGE,
            hint="mark one, or name a container with --container",
        )
    return chosen


def checkpoint_account_url(config: LandingZoneConfig) -> str:
    """The account's public blob endpoint (the private endpoint answers to the same name through private DNS)."""
    blob = config.storage.blob
    if isinstance(blob, ExistingBlob):
        account = blob.resource_id.rstrip("/").rsplit("/", 1)[-1]
    else:
        account = Zone(config).storage_account_name
    return f"https://{account}.blob.core.windows.net"


def signing_key(spec: BlobContainer) -> bytes | None:
    if spec.manifest_key is None:
        return None
    match = ENV_REFERENCE.match(spec.manifest_key.get_secret_value())
    if match is None:
        raise HpclzError(
            f"storage.blob.containers[{spec.name}].manifest_key: write the key as ${{env:NAME}}, not in the file",
            exit_code=ExitCode.CONFIG_INVALID,
            hint="HPCLZ-STO-056",
        )
    variable = match.group(1)
    value = os.environ.get(variable)
    if not value:
        raise HpclzError(
            f"storage.blob.containers[{spec.name}].manifest_key: environment variable {variable} is not set",
            exit_code=ExitCode.USAGE,
        )
    return value.encode()
