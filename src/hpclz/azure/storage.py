"""What the Azure Blob state backend (hpclz.azure.blob_state) needs from the storage SDK, so only hpclz.azure names it.

Import this module inside the functions that need it: importing it loads azure.core.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ServiceRequestError,
)

from hpclz.azure.errors import sign_in_failure, storage_code
from hpclz.state.errors import StateStorageError

__all__ = [
    "MatchConditions",
    "ResourceExistsError",
    "ResourceModifiedError",
    "ResourceNotFoundError",
    "break_lease",
    "storage_errors",
]


def break_lease(blob: Any) -> None:
    """Break whatever lease a blob holds, at once (`hpclz state unlock --force`)."""
    from azure.storage.blob import BlobLeaseClient

    BlobLeaseClient(blob).break_lease(lease_break_period=0)


@contextlib.contextmanager
def storage_errors(action: str) -> Iterator[None]:
    """Unreachable storage, refused credentials and unexpected service errors become one line each.

    Not-found, exists and modified errors pass through: callers turn them into meaning.
    """
    try:
        yield
    except (ResourceNotFoundError, ResourceExistsError, ResourceModifiedError):
        raise
    except ClientAuthenticationError as exc:
        no_token = sign_in_failure(str(exc.message or exc))
        raise StateStorageError(f"cannot {action}: {no_token or f'access denied ({_code(exc)})'}") from None
    except ServiceRequestError as exc:
        raise StateStorageError(f"cannot {action}: storage unreachable ({type(exc).__name__})") from None
    except HttpResponseError as exc:
        raise StateStorageError(f"cannot {action}: {_code(exc)}") from None


def _code(exc: Any) -> str:
    return storage_code(exc) or (str(exc).splitlines() or [type(exc).__name__])[0]
