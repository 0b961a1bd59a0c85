"""`hpclz state show|unlock`: read a landing zone's state and its lock, or break a stale lock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from hpclz.config.loader import load_config
from hpclz.deploy.backends import open_backend
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


def _open(config_path: Path, credential: Any = None) -> tuple[StateBackend, str]:
    loaded = load_config(config_path)
    backend = open_backend(
        loaded.config, base_dir=config_path.resolve().parent, credential=credential, config_file=str(config_path)
    )
    return backend, loaded.config.state.backend


def show_state(config_path: Path, *, credential: Any = None) -> CommandResult[StateShowResult]:
    backend, kind = _open(config_path, credential)
    doc = backend.read()
    shown = StateShowResult(
        location=backend.location,
        backend=kind,
        state=StateDocument.model_validate(masked(doc.model_dump(mode="json"))) if doc else None,
        lock=backend.lock_info(),
        history=backend.history(),
    )
    return CommandResult(command="state show", payload=shown)


def unlock_state(config_path: Path, *, force: bool, credential: Any = None) -> CommandResult[UnlockResult]:
    return CommandResult(command="state unlock", payload=_unlock(config_path, force=force, credential=credential))


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
