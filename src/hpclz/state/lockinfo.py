"""Who holds a state lock: recorded by every backend so a refused run and `unlock --force` can say so."""

from __future__ import annotations

import getpass
import os
import socket
import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from hpclz import __version__
from hpclz.state.model import now


def _who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers): fall back to the uid
        user = f"uid{os.getuid()}"
    return f"{user}@{socket.gethostname()}"


class LockInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    who: str = Field(default_factory=_who, description="user@host of the holder.")
    operation: str = Field(description="What the holder is doing: deploy, destroy, ...")
    pid: int = Field(default_factory=os.getpid, ge=0, strict=True)
    created: datetime = Field(default_factory=now)
    hpclz_version: str = __version__

    @classmethod
    def for_operation(cls, operation: str) -> LockInfo:
        return cls(operation=operation)

    def describe(self) -> str:
        created = self.created.strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"held by {self.who} (pid {self.pid}) for '{self.operation}' since {created}, lock id {self.id}"


def unlock_hint(config_file: str | None = None) -> str:
    target = config_file or "CONFIG"
    return f"if that run is gone, release it with `hpclz state unlock {target} --force`"


def locked_error_message(where: str, holder: LockInfo | None) -> str:
    who = holder.describe() if holder else "held by an unknown holder (no lock info recorded)"
    return f"state {where} is locked: {who}"
