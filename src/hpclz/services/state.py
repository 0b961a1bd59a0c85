"""`hpclz state show|unlock`: read a landing zone's state and its lock, or break a stale lock."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from hpclz.azure.backends import open_backend
from hpclz.config.loader import load_config
from hpclz.errors import ExitCode, HpclzError
from hpclz.output import CommandResult, ResultBody
from hpclz.state.backend import HistoryEntry, StateBackend
from hpclz.state.guard import masked
from hpclz.state.lockinfo import LockInfo, locked_error_message
from hpclz.state.model import StateDocument


class StateShowResult(ResultBody):
    location: str
    backend: str
    state: StateDocument | None
    lock: LockInfo | None
    history: list[HistoryEntry] = Field(default_factory=list)

    def json_body(self) -> dict[str, Any]:
        doc = self.state
        return {
            "location": self.location,
            "backend": self.backend,
            "exists": doc is not None,
            "serial": doc.serial if doc else None,
            "lineage": doc.lineage if doc else None,
            "config_hash": doc.config_hash if doc else None,
            "hpclz_version": doc.hpclz_version if doc else None,
            "updated_at": doc.updated_at.isoformat() if doc else None,
            "deployments": [
                {
                    "name": d.name,
                    "component": d.component,
                    "status": d.status.value,
                    "template_hash": d.template_hash,
                    "finished_at": d.finished_at.isoformat() if d.finished_at else None,
                }
                for d in (doc.deployments.values() if doc else [])
            ],
            "resources": [
                r.model_dump(mode="json", include={"id", "type", "name", "deployment"})
                for r in (doc.resources if doc else [])
            ],
            "outputs": doc.outputs if doc else {},
            "lock": self.lock.model_dump(mode="json") if self.lock else None,
            "history": [h.serial for h in self.history],
        }


class UnlockResult(ResultBody):
    location: str
    released: bool
    holder: LockInfo | None

    def json_body(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "released": self.released,
            "holder": self.holder.model_dump(mode="json") if self.holder else None,
        }


@dataclass(frozen=True)
class StateOptions:
    config: Path
    force: bool = False  # unlock: break the lock a run holds
    address: str = ""  # forget: a full resource ID, or `Type/name` as plan prints it
    credential: Any = None  # an azure-core TokenCredential for a Blob backend; DefaultAzureCredential when None


def _open(config_path: Path, credential: Any = None) -> tuple[StateBackend, str]:
    loaded = load_config(config_path)
    backend = open_backend(
        loaded.config, base_dir=config_path.resolve().parent, credential=credential, config_file=str(config_path)
    )
    return backend, loaded.config.state.backend


def show_state(opts: StateOptions) -> CommandResult[StateShowResult]:
    backend, kind = _open(opts.config, opts.credential)
    doc = backend.read()
    shown = StateShowResult(
        location=backend.location,
        backend=kind,
        state=StateDocument.model_validate(masked(doc.model_dump(mode="json"))) if doc else None,
        lock=backend.lock_info(),
        history=backend.history(),
    )
    return CommandResult(command="state show", payload=shown)


def unlock_state(opts: StateOptions) -> CommandResult[UnlockResult]:
    return CommandResult(
        command="state unlock", payload=_unlock(opts.config, force=opts.force, credential=opts.credential)
    )


def _unlock(config_path: Path, *, force: bool, credential: Any) -> UnlockResult:
    """Without --force only report: breaking a live run's lock can corrupt its deployment's state."""
    backend, _ = _open(config_path, credential)
    if not force:
        holder = backend.lock_info()
        if holder is None:
            return UnlockResult(location=backend.location, released=False, holder=None)
        raise HpclzError(
            f"{locked_error_message(backend.location, holder)}; make sure that run is gone, "
            f"then pass --force: hpclz state unlock {config_path} --force",
            exit_code=ExitCode.USAGE,
        )
    holder = backend.force_unlock()
    return UnlockResult(location=backend.location, released=holder is not None, holder=holder)


class ForgetResult(ResultBody):
    location: str
    forgotten: list[str] = Field(description="Resource IDs removed from state (Azure is not touched).")
    serial: int


def matching_records(doc: StateDocument, address: str) -> list[Any]:
    """Records an ADDRESS names: a full resource ID, or `Type/name` as plan prints it (case-insensitive)."""
    wanted = address.strip().lower()
    by_id = [r for r in doc.resources if r.id.lower() == wanted]
    return by_id or [r for r in doc.resources if f"{r.type}/{r.name}".lower() == wanted]


def forget_state(opts: StateOptions) -> CommandResult[ForgetResult]:
    """Remove one resource from state, leaving it in Azure (terraform's `state rm`): hpclz stops managing
    it. Its deployment is no longer taken as applied, so the next plan shows what it would do again."""
    from hpclz.state.identity import ZoneIdentity, refuse_foreign_state

    config_path, address, credential = opts.config, opts.address, opts.credential
    loaded = load_config(config_path)
    backend = open_backend(
        loaded.config, base_dir=config_path.resolve().parent, credential=credential, config_file=str(config_path)
    )
    with backend.lock("state forget"):
        doc = backend.read()
        if doc is None:
            raise HpclzError(
                f"{config_path}: no state at {backend.location}: nothing to forget", exit_code=ExitCode.USAGE
            )
        refuse_foreign_state(doc, ZoneIdentity.of_config(loaded.config), backend.location, str(config_path))
        found = matching_records(doc, address)
        if len(found) != 1:
            what = "no resource" if not found else f"{len(found)} resources"
            raise HpclzError(
                f"{config_path}: {what} in state match {address!r}; give the full resource ID "
                f"(`hpclz state show {config_path}` lists them)",
                exit_code=ExitCode.USAGE,
            )
        record = found[0]
        updated = doc.model_copy(deep=True)
        updated.resources = [r for r in updated.resources if r.id != record.id]
        updated.deployments.pop(record.deployment, None)
        written = backend.write(updated)
    forgotten = ForgetResult(location=backend.location, forgotten=[record.id], serial=written.serial)
    return CommandResult(command="state forget", payload=forgotten)
