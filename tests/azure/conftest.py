from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hpclz.azure.arm import Arm, deployment_body
from hpclz.azure.clients import AzureClients
from tests.support.arm_standin import ArmStandIn
from tests.support.standin_deployments import GROUP, finished


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin


@pytest.fixture
def adapter(arm: ArmStandIn) -> Arm:
    """hpclz's ARM adapter on the real SDK clients, pointed at the stand-in, with resource group rg1 deployed."""
    adapter = Arm(AzureClients(arm.subscription_id))
    adapter.submit(GROUP, deployment_body(GROUP, {}, {}))
    assert finished(adapter, GROUP)["properties"]["provisioningState"] == "Succeeded"
    return adapter
