"""The remediation state: one incident per faulty node, and the strikes each node has earned."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class Stage(StrEnum):
    DETECTED = "detected"  # a failed check seen; next: drain
    DRAINED = "drained"  # no job can start on it; next: classify
    ACTING = "acting"  # next: the ladder's current action (waits while the disruption budget is spent)
    CHECKING = "checking"  # the action is done; next: a health check decides return or the next action
    RETURNING = "returning"  # the check passed; next: resume
    RETURNED = "returned"  # terminal: back in service
    RETIRED = "retired"  # terminal: reported to Azure, left drained for Azure's repair
    DEFERRED = "deferred"  # terminal: another tool owns the node's drain; hpclz does not touch it


TERMINAL = frozenset({Stage.RETURNED, Stage.RETIRED, Stage.DEFERRED})
# Stages in which the node is out of service because of hpclz's repair (counted against the disruption budget).
IN_REPAIR = frozenset({Stage.ACTING, Stage.CHECKING, Stage.RETURNING})


class Evidence(BaseModel):
    check_id: str
    message: str
    nhc_code: str | None = None


class Incident(BaseModel):
    id: str
    node: str
    partitions: list[str] = Field(default_factory=list)
    detected_at: str  # ISO 8601 UTC
    evidence: list[Evidence] = Field(default_factory=list)
    stage: Stage = Stage.DETECTED
    fault_code: str | None = None
    category: str | None = None
    ladder: list[str] = Field(default_factory=list)
    rung: int = 0
    actions_done: list[str] = Field(default_factory=list)
    inconclusive_checks: int = 0
    report_id: str | None = None  # Azure's impactUniqueId once filed
    physical_host: str | None = None  # from the node's verify report (Hyper-V KVP): what a health report names
    gpu_serials: dict[str, str] = Field(default_factory=dict, description="GPU bus id -> serial, from the report")
    note: str = ""  # why it waits or stopped, for people
    closed_at: str | None = None

    @property
    def open(self) -> bool:
        return self.stage not in TERMINAL

    @property
    def action(self) -> str | None:
        return self.ladder[self.rung] if self.rung < len(self.ladder) else None

    @property
    def report_name(self) -> str:
        """The workloadImpact name: one per incident (pattern ^[a-zA-Z0-9][a-zA-Z0-9-:]*[a-zA-Z0-9]{3,120}$,
        azure-rest-api-specs specification/impact/Impact.Management/workloadImpacts.tsp)."""
        safe = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in self.node)
        return f"hpclz-{safe}-{self.id}"


class RemediationState(BaseModel):
    incidents: dict[str, Incident] = Field(default_factory=dict)
    strikes: dict[str, list[str]] = Field(default_factory=dict, description="node -> times of its incidents")
    next_id: int = 1

    def open_for(self, node: str) -> Incident | None:
        return next((i for i in self.incidents.values() if i.node == node and i.open), None)


class Event(BaseModel):
    """One line of the event log."""

    time: str
    incident: str
    node: str
    stage_from: Stage
    stage_to: Stage
    action: str | None = None
    detail: str = ""
    dry_run: bool = False
