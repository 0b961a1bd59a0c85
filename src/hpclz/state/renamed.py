"""A renamed zone: the config file that deployed one landing zone, now naming another name or environment.

Every resource name and resource group derives from `metadata.name` and `metadata.environment`
(hpclz.naming), and local state is kept per zone (`<state.path>/<name>-<environment>/`). Run under a new name,
the same file would find no state, plan a complete second zone on the same address space and leave the first one
running and unmanaged. So each local state records the config file that deployed it (relative to the state
folder), and plan and deploy refuse a zone with no state of its own while that file's earlier zone still holds
resources beside it. Blob state is named per zone too, but its container is not searched: see `refuse_renamed_zone`.
"""

from __future__ import annotations

import os
from pathlib import Path

from hpclz.config.loader import LoadedConfig
from hpclz.errors import HpclzError
from hpclz.state.backend import StateBackend
from hpclz.state.local import LocalBackend, load_document
from hpclz.state.model import StateDocument


def config_ref(backend: StateBackend, config_file: str) -> str | None:
    """The config file as the local state folder records it (None for other backends)."""
    if not isinstance(backend, LocalBackend):
        return None
    return os.path.relpath(Path(config_file).resolve(), backend.state_dir.resolve())


def earlier_zone(backend: StateBackend, config_file: str) -> tuple[Path, StateDocument] | None:
    """The state beside this zone's that the same config file deployed and that still lists resources."""
    ref = config_ref(backend, config_file)
    if ref is None or not isinstance(backend, LocalBackend) or backend.state_file.exists():
        return None
    if not backend.state_dir.is_dir():
        return None
    for path in sorted(backend.state_dir.glob("*/state.json")):
        if path.parent == backend.root:
            continue
        doc = load_document(path)
        if doc is not None and doc.config_file == ref and doc.resources:
            return path, doc
    return None


def refuse_renamed_zone(backend: StateBackend, loaded: LoadedConfig) -> None:
    """Raise before anything is read from Azure or written when the config renames a deployed zone.

    Only local state is searched: a Blob state's container may hold other teams' zones, which are not this
    file's to compare (the identity check, hpclz.state.identity, still refuses a shared blob name)."""
    found = earlier_zone(backend, loaded.file)
    if found is None:
        return
    path, old = found
    meta = loaded.config.metadata
    fields = [
        f"metadata.{key}: {before!r} -> {after!r}"
        for key, before, after in (
            ("name", old.landing_zone, meta.name),
            ("environment", old.environment, meta.environment.value),
        )
        if before != after
    ]
    key = "name" if old.landing_zone != meta.name else "environment"
    line = loaded.source.locate(("metadata", key)).line
    raise HpclzError(
        f"{loaded.file}:{line}: {', '.join(fields)} NOT ALLOWED: every resource name and group derives from them, "
        f"so this would build a second landing zone and orphan {old.landing_zone}-{old.environment} "
        f"({len(old.resources)} resources in {path}); destroy that zone under its old name first, or copy the config "
        "to a new file for a second zone; nothing was changed"
    )
