"""Names a landing zone's state by, and the fresh document a first deployment starts from.

Opening a backend lives in hpclz.azure.backends: it picks between the local backend here and the Azure
Blob backend in the Azure adapter, so state never imports the adapter.
"""

from __future__ import annotations

from hpclz.config.root import LandingZoneConfig
from hpclz.state.model import StateDocument


def zone_key(config: LandingZoneConfig) -> str:
    """One landing zone's state is keyed by name and environment: dev and prod never share a state."""
    return f"{config.metadata.name}-{config.metadata.environment.value}"


def default_blob_name(config: LandingZoneConfig) -> str:
    return f"{zone_key(config)}.hpclz-state.json"


def new_state(config: LandingZoneConfig) -> StateDocument:
    """An empty document (serial 0, new lineage) for a landing zone never deployed."""
    meta = config.metadata
    return StateDocument(
        landing_zone=meta.name,
        environment=meta.environment.value,
        subscription_id=meta.resolved_subscription_id(),
        location=str(meta.location),
    )
