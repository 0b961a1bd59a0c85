"""Monitoring, maintenance, state backend and verify settings."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from hpclz.config.base import ContainerName, Disabled, ResourceId, StrictModel
from hpclz.config.constraints import Integer, Number
from hpclz.config.timezones import check_maintenance_time_zone


class ActionGroup(StrictModel):
    short_name: str = Field(default="hpcalerts", pattern=r"^[A-Za-z0-9]{1,12}$")
    emails: list[Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]] = Field(default_factory=list)


class ManagedPrometheus(StrictModel):
    """Node and GPU metrics as CCWS's monitoring collects them (Azure/cyclecloud-monitoring): every cluster node runs
    Prometheus in agent fashion with node exporter (and DCGM exporter on GPU nodes) and remote-writes to an Azure
    Monitor workspace; Azure Managed Grafana reads it. CycleCloud creates the node scale sets, so the agent is
    installed by the node scripts, not by ARM."""

    mode: Literal["new"] = "new"
    grafana: bool = Field(default=True, description="Azure Managed Grafana on the workspace; admins get Grafana Admin.")
    gpu_exporter: bool = Field(default=True, description="DCGM exporter on nodes with NVIDIA GPUs (XID, ECC, usage).")
    alerts: bool = Field(default=True, description="Prometheus alert rules: node down, GPU XID and ECC errors.")


class NewMonitoring(StrictModel):
    mode: Literal["new"] = "new"
    retention_days: Integer = Field(default=30, ge=30, le=730)
    diagnostic_settings: bool = Field(default=True, description="Send resource logs and metrics to the workspace.")
    action_group: ActionGroup = Field(default_factory=ActionGroup)
    alerts: bool = Field(default=True, description="Metric alerts on scheduler CPU and storage availability.")
    agent: bool = Field(
        default=True,
        description="Azure Monitor agent and the data collection rule's association on every VM hpclz creates.",
    )
    prometheus: Annotated[ManagedPrometheus | Disabled, Field(discriminator="mode")] = Field(
        default_factory=Disabled, description="Managed Prometheus and Grafana for node and GPU metrics."
    )


class ExistingMonitoring(StrictModel):
    mode: Literal["existing"] = "existing"
    workspace_resource_id: ResourceId
    diagnostic_settings: bool = True
    agent: bool = Field(
        default=True,
        description="Azure Monitor agent and the data collection rule's association on every VM hpclz creates.",
    )


Monitoring = Annotated[NewMonitoring | ExistingMonitoring | Disabled, Field(discriminator="mode")]


class MaintenanceWindow(StrictModel):
    """Azure maintenance configuration window (Microsoft.Maintenance)."""

    start: str = Field(
        pattern=r"^\d{4}-\d{2}-\d{2} ([01]\d|2[0-3]):[0-5]\d$",
        examples=["2026-01-03 22:00"],
        description="First window start, 'YYYY-MM-DD hh:mm' in time_zone.",
    )
    duration: str = Field(default="05:00", pattern=r"^\d{2}:[0-5]\d$", description="hh:mm")
    time_zone: Annotated[str, AfterValidator(check_maintenance_time_zone)] = Field(
        default="UTC", description="A Windows time zone ID, as Azure Maintenance takes it (e.g. Pacific Standard Time)."
    )
    recur_every: str = Field(default="1Week Saturday", examples=["1Week Saturday", "1Day", "1Month Third Sunday"])


EventType = Literal["Freeze", "Reboot", "Redeploy", "Preempt", "Terminate"]
DRAIN_BY_DEFAULT: tuple[EventType, ...] = ("Reboot", "Redeploy", "Preempt", "Terminate")


class ScheduledEvents(StrictModel):
    """React to Azure Scheduled Events so training jobs drain instead of dying mid-step."""

    enabled: bool = True
    drain_on: list[EventType] = Field(default_factory=lambda: list(DRAIN_BY_DEFAULT))
    requeue_jobs: bool = True


class Maintenance(StrictModel):
    window: MaintenanceWindow | None = None
    # Host scope is for isolated sizes and dedicated hosts; the one VM hpclz assigns (CycleCloud) is patched in guest.
    scope: Literal["Host", "OSImage", "Extension", "InGuestPatch", "Resource"] = "InGuestPatch"
    scheduled_events: ScheduledEvents = Field(default_factory=ScheduledEvents)


class LocalState(StrictModel):
    backend: Literal["local"] = "local"
    path: str = Field(default=".hpclz", description="Folder for state, its lock and previous versions.")
    outside_config_folder: bool = Field(
        default=False,
        description="Allow a `path` that leads outside the config file's folder (an absolute path, `..`, or a "
        "link): state there is kept only when asked for here.",
    )


ACCOUNT_URL_PATTERN = r"^https://[A-Za-z0-9.-]+(:\d{1,5})?/?$"


class AzureBlobState(StrictModel):
    backend: Literal["azure_blob"] = "azure_blob"
    # https only: the Azure SDK refuses a bearer token over plain http ("Bearer token authentication is not
    # permitted for non-TLS protected (non-https) URLs", azure-core BearerTokenCredentialPolicy), so an http
    # URL passed validate and failed later in plan. Azurite is reached by its connection string instead.
    account_url: str = Field(pattern=ACCOUNT_URL_PATTERN, examples=["https://sthpclzstate.blob.core.windows.net"])
    container: ContainerName = "hpclz-state"
    blob_name: str | None = Field(default=None, description="Defaults to <name>-<environment>.tfstate-like JSON name.")


StateBackend = Annotated[LocalState | AzureBlobState, Field(discriminator="backend")]


class Verify(StrictModel):
    """Overrides for `hpclz verify`: thresholds per SKU and metric, and time budgets."""

    thresholds: dict[str, dict[str, Number]] = Field(
        default_factory=dict,
        examples=[{"Standard_ND96isr_H100_v5": {"nccl_allreduce_busbw_gbps": 450}}],
    )
    partitions: list[str] = Field(default_factory=list, description="Partitions to verify; empty = all GPU ones.")
    check_timeout_seconds: Integer = Field(default=300, ge=10, le=3600)
