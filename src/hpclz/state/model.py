"""The state document: a versioned record of what hpclz applied. Never holds a secret.

A contract between deploy (writes it), plan (diffs against it) and destroy (deletes what it lists).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hpclz import __version__
from hpclz.state.fingerprint import SecretFingerprint

STATE_SCHEMA_VERSION = 1


def now() -> datetime:
    return datetime.now(UTC)


class DeploymentStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"


class Record(BaseModel):
    """State is read back and trusted by plan and destroy: a key this hpclz does not know means the file was
    edited by hand or written by another tool, and guessing what it meant could delete the wrong resource."""

    model_config = ConfigDict(extra="forbid")


class ResourceRecord(Record):
    id: str = Field(description="Full Azure resource ID.")
    type: str = Field(description="e.g. Microsoft.Network/virtualNetworks")
    name: str
    api_version: str
    deployment: str = Field(description="Name of the deployment that created it.")
    data_bearing: bool = Field(default=False, description="Holds user data (kept by destroy unless --include-data).")
    pending_delete: bool = Field(
        default=False,
        description="The config no longer asks for it and ARM's incremental mode left it in place: deploy deletes "
        "it after its creates and updates, and the record leaves state only then.",
    )
    properties: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "The whole rendered body (location, sku, kind, zones, tags, identity, properties; never a secure"
            " parameter), for offline plan diffs."
        ),
    )


class DeploymentRecord(Record):
    name: str
    component: str
    scope: str
    resource_group: str | None = None
    template_hash: str
    status: DeploymentStatus
    arm_id: str | None = None
    correlation_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    outputs: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    drifted: bool = Field(
        default=False,
        description="`deploy --refresh-only` recorded what Azure has for its resources (changed or deleted outside "
        "hpclz): the template no longer describes them, so the next deploy submits it again.",
    )


class AppRoleAssignmentRecord(Record):
    """An app role assignment hpclz made in CycleCloud's Entra app (Microsoft Graph, not ARM): destroy deletes exactly
    these, by `id`, and never one it finds there without a record."""

    id: str = Field(description="The appRoleAssignment's Graph ID.")
    resource_id: str = Field(description="Object ID of the app's service principal (the assignment's resourceId).")
    principal_id: str = Field(description="Object ID of the group given the role (identity.groups).")
    app_role_id: str
    app_role: str = Field(description="The app role's value, e.g. Global.Node.User.")
    app_id: str = Field(description="The app's client ID (identity.cyclecloud_entra.client_id).")


class StateDocument(Record):
    schema_version: int = Field(default=STATE_SCHEMA_VERSION, ge=1, le=STATE_SCHEMA_VERSION)
    lineage: str = Field(
        default_factory=lambda: str(uuid.uuid4()),
        pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        description="A UUID made when the state is first written; every later version keeps it.",
    )
    serial: int = Field(default=0, ge=0, strict=True)
    hpclz_version: str = __version__
    landing_zone: str
    environment: str
    subscription_id: str | None = None
    location: str | None = Field(default=None, description="The zone's region (hpclz.state.identity).")
    config_hash: str = ""
    config_file: str | None = Field(
        default=None,
        description="Local state: the config file that deployed this zone, relative to the state folder; the same "
        "file later naming another zone is a rename, refused (hpclz.state.renamed).",
    )
    deployments: dict[str, DeploymentRecord] = Field(default_factory=dict)
    resources: list[ResourceRecord] = Field(default_factory=list)
    outputs: dict[str, Any] = Field(default_factory=dict)
    applied_config: dict[str, Any] = Field(
        default_factory=dict,
        description="The config as last applied, plain data with secrets redacted "
        "(hpclz.plan.config_diff.config_snapshot): the baseline of `hpclz plan`'s config-level diff.",
    )
    secret_fingerprints: dict[str, SecretFingerprint] = Field(
        default_factory=dict,
        description="'<deployment>/<parameter>' -> salted scrypt fingerprint of the secret deployed there: "
        "tells a rotated value without holding it (hpclz.state.fingerprint).",
    )
    destroyed_runs: dict[str, str] = Field(
        default_factory=dict,
        description="Deployment name -> ARM correlation ID of the run whose resources destroy took down: a later "
        "destroy does not read that run back from ARM's deployment history (hpclz.deploy.in_flight).",
    )
    app_role_assignments: list[AppRoleAssignmentRecord] = Field(
        default_factory=list,
        description="App role assignments deploy made through Microsoft Graph in CycleCloud's Entra app "
        "(hpclz.deploy.app_roles); destroy deletes these and no other.",
    )
    created_at: datetime = Field(default_factory=now)
    updated_at: datetime = Field(default_factory=now)

    def applied(self, deployment: str, template_hash: str, resource_group: str | None = None) -> bool:
        """The deployment succeeded with this template hash (into `resource_group`, when one is given): submitting
        it again would change nothing. The hash leaves the group out, so a deployment moved to another group
        is compared by the recorded group too."""
        record = self.deployments.get(deployment)
        return (
            record is not None
            and record.status is DeploymentStatus.SUCCEEDED
            and not record.drifted
            and record.template_hash == template_hash
            and (resource_group is None or (record.resource_group or "").lower() == resource_group.lower())
        )
