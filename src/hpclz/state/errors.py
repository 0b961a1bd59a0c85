"""Errors a state backend raises: each is one line a user can act on."""

from __future__ import annotations

from hpclz.errors import ExitCode, HpclzError


class StateLockedError(HpclzError):
    """Another run holds the state lock (or this run lost it)."""

    exit_code = ExitCode.STATE_LOCKED


class StateConflictError(HpclzError):
    """The stored state is not the one this write was based on: stale serial, other lineage, or changed ETag."""

    exit_code = ExitCode.FAILED


class SecretInStateError(HpclzError):
    """A document about to be written holds a secret value; the message names where, never what."""

    exit_code = ExitCode.FAILED


class StateStorageError(HpclzError):
    """The state could not be read or written (permissions, corrupt file, unreachable storage)."""

    exit_code = ExitCode.FAILED
