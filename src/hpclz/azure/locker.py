"""Put a file in CycleCloud's locker account through the storage SDK, signed in with Entra ID (the account refuses
shared keys). HPCLZ_LOCKER_CONNECTION_STRING (Azurite, an account key) replaces the account URL in tests."""

from __future__ import annotations

import os
from pathlib import Path

from hpclz.azure.errors import storage_code
from hpclz.errors import ExitCode, HpclzError

CONNECTION_STRING_ENV = "HPCLZ_LOCKER_CONNECTION_STRING"


class LockerError(HpclzError):
    exit_code = ExitCode.AZURE_ERROR
    code = ""  # the storage service's error code, when it sent one


# What Blob storage answers a call its network does not let in: 403 AuthorizationFailure, "This request is not
# authorized to perform this operation." (learn.microsoft.com/rest/api/storageservices/blob-service-error-codes).
NETWORK_REFUSAL = "AuthorizationFailure"


def locker_url(account: str) -> str:
    return f"https://{account}.blob.core.windows.net"


def upload_once(account: str, container: str, name: str, path: Path) -> bool:
    """Upload `path` as blob `name` unless it is there already (names are content digests); True when uploaded."""
    from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ResourceExistsError

    from hpclz.azure.clients import blob_service_client

    service = blob_service_client(locker_url(account), connection_string=os.environ.get(CONNECTION_STRING_ENV))
    blob = service.get_blob_client(container, name)
    where = f"{container}/{name} in the CycleCloud locker {account}"
    try:
        with path.open("rb") as data:
            blob.upload_blob(data, overwrite=False)
    except ResourceExistsError:
        return False
    except ClientAuthenticationError as exc:
        raise LockerError(f"cannot upload {where}: sign-in refused ({_code(exc)})") from None
    except HttpResponseError as exc:
        error = LockerError(f"cannot upload {where}: {_code(exc)}{_hint(exc)}")
        error.code = storage_code(exc)
        raise error from None
    return True


def _code(exc: object) -> str:
    return storage_code(exc) or (str(exc).splitlines() or [type(exc).__name__])[0]


def _hint(exc: object) -> str:
    """Storage's documented error codes (learn.microsoft.com/rest/api/storageservices/blob-service-error-codes)."""
    code = storage_code(exc)
    if code == "AuthorizationPermissionMismatch":
        return "; the deploying identity needs Storage Blob Data Contributor on that container (identity.groups.admins)"
    if code == "AuthorizationFailure":
        return "; the locker accepts its private endpoint only: deploy from inside the landing zone's network"
    if code == "ContainerNotFound":
        return "; the storage deployment creates that container: deploy it first"
    return ""
