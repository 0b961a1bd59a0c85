"""Deployments the ARM stand-in tests drive through the real SDK clients, and the wait for ARM's long-running PUT."""

from __future__ import annotations

import time
from typing import Any

from hpclz.azure.arm import Arm
from hpclz.render.model import Deployment

# The subscription-scope deployment every stand-in test starts from: the resource group the others deploy into.
GROUP = Deployment(
    name="org",
    component="organization",
    scope="subscription",
    location="eastus2",
    template={
        "resources": [
            {
                "type": "Microsoft.Resources/resourceGroups",
                "apiVersion": "2022-09-01",
                "name": "rg1",
                "location": "eastus2",
            }
        ]
    },
)


def finished(arm: Arm, d: Deployment) -> dict[str, Any]:
    """The deployment once ARM stops reporting it Accepted or Running (the stand-in answers within seconds)."""
    for _ in range(500):
        remote = arm.get_deployment(d) or {}
        if remote.get("properties", {}).get("provisioningState") not in ("Accepted", "Running"):
            return remote
        time.sleep(0.02)
    raise AssertionError("deployment never finished")
