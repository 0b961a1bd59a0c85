"""Whose state is this? A state document names the landing zone it describes, and a command refuses a
document that describes another one before it reads anything else from it.

A state written for zone A but opened by zone B's config (a copied `state.path`, a shared blob name)
would otherwise be merged by deploy and emptied by destroy: both act on the IDs the state lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from hpclz.config.root import LandingZoneConfig
from hpclz.errors import ExitCode, HpclzError
from hpclz.state.model import StateDocument


@dataclass(frozen=True)
class ZoneIdentity:
    """What makes two documents the same landing zone. `None` where the caller does not know the value."""

    landing_zone: str
    environment: str
    subscription_id: str | None = None
    location: str | None = None

    @classmethod
    def of_config(cls, config: LandingZoneConfig, subscription_id: str | None = None) -> ZoneIdentity:
        meta = config.metadata
        return cls(
            landing_zone=meta.name,
            environment=meta.environment.value,
            subscription_id=subscription_id or meta.resolved_subscription_id(),
            location=str(meta.location),
        )


def identity_mismatches(doc: StateDocument, wanted: ZoneIdentity, *, check_location: bool = True) -> list[str]:
    """Why `doc` is not this zone's state; empty when it is. A field the document or the caller does not
    know (states written before hpclz recorded it, a plan without a subscription) is not compared."""
    reasons = []
    if doc.landing_zone != wanted.landing_zone:
        reasons.append(f"it belongs to landing zone {doc.landing_zone!r}, not {wanted.landing_zone!r}")
    if doc.environment != wanted.environment:
        reasons.append(f"it belongs to environment {doc.environment!r}, not {wanted.environment!r}")
    if doc.subscription_id and wanted.subscription_id and doc.subscription_id != wanted.subscription_id:
        reasons.append(f"it was deployed to subscription {doc.subscription_id}, not {wanted.subscription_id}")
    if check_location and doc.location and wanted.location and doc.location.lower() != wanted.location.lower():
        reasons.append(f"it was deployed to {doc.location}, not {wanted.location} (a region cannot change in place)")
    return reasons


def refuse_foreign_state(
    doc: StateDocument | None, wanted: ZoneIdentity, where: str, file: str, *, check_location: bool = True
) -> None:
    """Raise before any write when `doc` describes another landing zone."""
    if doc is None:
        return
    reasons = identity_mismatches(doc, wanted, check_location=check_location)
    if reasons:
        raise HpclzError(
            f"{file}: refusing the state at {where}: {'; '.join(reasons)}",
            exit_code=ExitCode.USAGE,
            hint="point `state:` at this zone's own state, or use the config the state was deployed with",
        )
