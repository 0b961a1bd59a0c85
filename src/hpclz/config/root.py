"""The landing-zone config: the root of the model."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from hpclz.config.backup import Backup
from hpclz.config.base import StrictModel
from hpclz.config.budget import Budget
from hpclz.config.compute import Compute
from hpclz.config.identity import Identity
from hpclz.config.metadata import Metadata
from hpclz.config.network import Network
from hpclz.config.operations import LocalState, Maintenance, Monitoring, NewMonitoring, StateBackend, Verify
from hpclz.config.organization import Organization
from hpclz.config.portal import Portal
from hpclz.config.security import Defender
from hpclz.config.storage import Storage


def _not_a_boolean(value: Any) -> Any:
    """YAML's `true` is a bool, which Python counts as 1: it must not pass for the number 1."""
    if isinstance(value, bool):
        raise ValueError(f"must be the number 1, not {str(value).lower()}")
    return value


class LandingZoneConfig(StrictModel):
    """An Azure landing zone for one HPC / AI training cluster."""

    schema_version: Annotated[Literal[1], BeforeValidator(_not_a_boolean)] = 1
    metadata: Metadata
    organization: Organization = Field(default_factory=Organization)
    identity: Identity
    network: Network
    compute: Compute
    storage: Storage = Field(default_factory=Storage)
    monitoring: Monitoring = Field(default_factory=NewMonitoring)
    maintenance: Maintenance = Field(default_factory=Maintenance)
    state: StateBackend = Field(default_factory=LocalState)
    verify: Verify = Field(default_factory=Verify)
    defender: Defender = Field(
        default_factory=Defender, description="Microsoft Defender for Cloud plans, set at subscription scope (opt-in)."
    )
    portal: Portal = Field(
        default_factory=Portal, description="Open OnDemand web portal to the cluster, private only (off by default)."
    )
    backup: Backup = Field(
        default_factory=Backup, description="Azure Backup of the CycleCloud server (Recovery Services vault)."
    )
    budget: Budget | None = Field(
        default=None, description="Monthly spending ceiling; `hpclz plan` shows the estimate against it."
    )
    suppress: list[str] = Field(
        default_factory=list,
        description="Rule IDs to silence for this config (e.g. HPCLZ-CMP-005), each a deliberate choice.",
    )
