"""CycleCloud's locker for deploys on the ARM stand-in: a process-wide Azurite account with the wheel container
that the storage deployment creates in Azure, so `hpclz deploy` uploads its wheel through the real storage SDK."""

from __future__ import annotations

import contextlib
from functools import cache

from hpclz.azure.locker import CONNECTION_STRING_ENV
from hpclz.render.roles import WHEEL_CONTAINER
from tests.support.azurite import shared_azurite


@cache
def _prepared() -> str:
    from azure.core.exceptions import ResourceExistsError
    from azure.storage.blob import BlobServiceClient

    service = shared_azurite()
    with contextlib.suppress(ResourceExistsError):
        BlobServiceClient.from_connection_string(service.connection_string).create_container(WHEEL_CONTAINER)
    return service.connection_string


def locker_env() -> dict[str, str]:
    return {CONNECTION_STRING_ENV: _prepared()}
