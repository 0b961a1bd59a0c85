"""Pick and open the state backend a config names (`state:`): local, or Azure Blob through the adapter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hpclz.config.operations import AzureBlobState, LocalState
from hpclz.config.root import LandingZoneConfig
from hpclz.state.backend import StateBackend
from hpclz.state.factory import default_blob_name, zone_key
from hpclz.state.guard import SecretGuard


def open_backend(
    config: LandingZoneConfig,
    *,
    base_dir: Path,
    credential: Any = None,
    config_file: str | None = None,
    guard: SecretGuard | None = None,
) -> StateBackend:
    """The backend `config.state` selects.

    base_dir: the config file's folder (a local `state.path` is relative to it).
    credential: an azure-core TokenCredential for the Blob backend; DefaultAzureCredential when None.
        The environment variable HPCLZ_STATE_CONNECTION_STRING (a storage connection string, e.g.
        Azurite's) takes precedence over both and over `account_url`.
    config_file: named in hints such as `hpclz state unlock CONFIG --force`.
    guard: secrets to refuse on write; defaults to every SecretStr value in `config`.
    """
    guard = guard or SecretGuard.for_config(config)
    settings = config.state
    if isinstance(settings, LocalState):
        from hpclz.state.local import LocalBackend

        return LocalBackend(Path(base_dir) / settings.path, zone_key(config), guard=guard, config_file=config_file)
    if isinstance(settings, AzureBlobState):
        from hpclz.azure.blob_state import BlobBackend

        return BlobBackend.connect(
            account_url=settings.account_url,
            container=settings.container,
            blob_name=settings.blob_name or default_blob_name(config),
            credential=credential,
            guard=guard,
            config_file=config_file,
            zone=zone_key(config),
        )
    raise AssertionError(f"unhandled state backend {type(settings).__name__}")  # the config union is closed
