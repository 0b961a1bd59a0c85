"""The deployment plan: what render produces and what plan and deploy consume.

A contract between layers: render fills it, plan diffs it, deploy applies it. Field names are
stable; add fields with defaults.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class Scope(StrEnum):
    SUBSCRIPTION = "subscription"
    RESOURCE_GROUP = "resourceGroup"


# Tags every layer reads: render writes them, plan and destroy decide by them.
MANAGED_TAG = "hpclz-managed"
DATA_TAG = "hpclz-data"
ZONE_TAG = "hpclz-zone"  # the zone's name: destroy's ownership proof reads it with the environment's
ENVIRONMENT_TAG = "hpclz-environment"
# Types that hold user data even when a template forgot the data tag: plan warns, destroy keeps them by default.
DATA_BEARING_TYPES = frozenset(
    t.lower()
    for t in (
        "Microsoft.StorageCache/amlFilesystems",
        "Microsoft.NetApp/netAppAccounts/capacityPools/volumes",
        "Microsoft.Storage/storageAccounts",
        "Microsoft.Storage/storageAccounts/blobServices/containers",
        "Microsoft.Storage/storageAccounts/fileServices/shares",
        # Slurm accounting: every job's record (sacct, fair-share history).
        "Microsoft.DBforMySQL/flexibleServers",
    )
)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Deployment(BaseModel):
    """One ARM deployment: a template and its parameters at one scope."""

    name: str = Field(description="ARM deployment name, unique within the landing zone.")
    component: str = Field(description="organization, identity, network, storage, compute, monitoring, ...")
    scope: Scope
    resource_group: str | None = Field(default=None, description="Target resource group (resourceGroup scope).")
    location: str = Field(description="Deployment location (required by ARM at subscription scope).")
    template: dict[str, Any]
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="Parameter values; never secrets (see secure_parameters)."
    )
    secure_parameters: dict[str, str] = Field(
        default_factory=dict,
        description="secureString parameter name -> config path of the secret, resolved only at deploy time.",
    )
    depends_on: list[str] = Field(default_factory=list, description="Names of deployments that must finish first.")
    artifacts: dict[str, str] = Field(
        default_factory=dict,
        description="Readable copies of payloads embedded in the template (cloud-init, CycleCloud cluster), by file name.",
    )

    def template_hash(self) -> str:
        """Identifies what would be applied; equal hashes mean a redeploy changes nothing."""
        body = canonical_json({"template": self.template, "parameters": self.parameters, "scope": self.scope})
        return hashlib.sha256(body.encode()).hexdigest()

    def resources(self) -> list[dict[str, Any]]:
        return list(self.template.get("resources", []))


class DeploymentPlan(BaseModel):
    landing_zone: str
    environment: str
    location: str
    subscription_id: str | None = None
    config_hash: str
    deployments: list[Deployment]

    def by_name(self) -> dict[str, Deployment]:
        return {d.name: d for d in self.deployments}

    def waves(self) -> list[list[Deployment]]:
        """Deployments grouped so each group depends only on earlier groups (run a group concurrently)."""
        remaining = {d.name: d for d in self.deployments}
        done: set[str] = set()
        waves: list[list[Deployment]] = []
        while remaining:
            ready = [d for d in remaining.values() if set(d.depends_on) <= done]
            if not ready:
                raise ValueError(f"dependency cycle among deployments: {sorted(remaining)}")
            waves.append(sorted(ready, key=lambda d: d.name))
            for d in ready:
                done.add(d.name)
                del remaining[d.name]
        return waves
