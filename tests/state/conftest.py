"""Fixtures for the state backends: a landing-zone config, and one backend of each kind on the same storage."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from hpclz.azure.backends import open_backend
from hpclz.azure.blob_state import CONNECTION_STRING_ENV
from hpclz.config.identity import NewKeyVault
from hpclz.config.loader import load_config
from hpclz.config.operations import AzureBlobState
from hpclz.config.root import LandingZoneConfig
from hpclz.state.backend import StateBackend
from hpclz.state.model import DeploymentRecord, DeploymentStatus, ResourceRecord, StateDocument
from tests.conftest import REPO
from tests.support.azurite import Azurite, azurite  # noqa: F401  (a fixture, used by name)

PLANTED_SECRET = "Lic3nce-Server-Key-4c9f1d"
# No real Azure account is reached: the connection string env var points every blob test at Azurite.
UNREACHED_ACCOUNT = "https://sthpclzstate.blob.core.windows.net"

OpenBackend = Callable[..., StateBackend]


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    target = tmp_path / "lz" / "energy.yaml"
    target.parent.mkdir()
    shutil.copy(REPO / "configs" / "energy.yaml", target)
    return target


@pytest.fixture
def config(config_file: Path) -> LandingZoneConfig:
    """The energy preset with one Key Vault secret, so the guard has a config secret to look for."""
    loaded = load_config(config_file).config
    vault = NewKeyVault(secrets={"licence-key": SecretStr(PLANTED_SECRET)})
    identity = loaded.identity.model_copy(update={"key_vault": vault})
    return loaded.model_copy(update={"identity": identity})


@pytest.fixture
def blob_env(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> Azurite:  # noqa: F811
    monkeypatch.setenv(CONNECTION_STRING_ENV, azurite.connection_string)
    return azurite


def blob_config(config: LandingZoneConfig) -> LandingZoneConfig:
    # A container per test keeps tests independent on the one session-wide Azurite.
    container = f"t{uuid.uuid4().hex[:20]}"
    state = AzureBlobState(account_url=UNREACHED_ACCOUNT, container=container)
    return config.model_copy(update={"state": state})


@pytest.fixture(params=["local", pytest.param("azure_blob", marks=pytest.mark.azurite)])
def open_state(request: pytest.FixtureRequest, config: LandingZoneConfig, config_file: Path) -> OpenBackend:
    """Opens a new backend instance (a separate writer) on the same storage each time it is called."""
    if request.param == "azure_blob":
        request.getfixturevalue("blob_env")
        config = blob_config(config)

    def _open(**options: Any) -> StateBackend:
        backend = open_backend(config, base_dir=config_file.parent, config_file=str(config_file))
        for name, value in options.items():
            setattr(backend, name, value)
        return backend

    return _open


def sample_state(config: LandingZoneConfig) -> StateDocument:
    from hpclz.state.factory import new_state

    doc = new_state(config)
    rg = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-energy-network-prod"
    doc.config_hash = "c0ffee"
    doc.deployments["energy-network"] = DeploymentRecord(
        name="energy-network",
        component="network",
        scope="resourceGroup",
        resource_group="rg-energy-network-prod",
        template_hash="ab" * 32,
        status=DeploymentStatus.SUCCEEDED,
    )
    doc.resources.append(
        ResourceRecord(
            id=f"{rg}/providers/Microsoft.Network/virtualNetworks/vnet-energy-prod",
            type="Microsoft.Network/virtualNetworks",
            name="vnet-energy-prod",
            api_version="2024-05-01",
            deployment="energy-network",
            properties={"addressSpace": {"addressPrefixes": ["10.40.0.0/16"]}},
        )
    )
    doc.outputs["vnetId"] = doc.resources[0].id
    return doc
