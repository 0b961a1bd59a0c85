"""What verify measures and reports. A contract between the node agent, Slurm dispatch and the report."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class Status(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    NOT_MEASURED = "not_measured"

    @property
    def rank(self) -> int:
        return {"pass": 0, "not_measured": 1, "warn": 2, "fail": 3}[self.value]


class CheckResult(BaseModel):
    """One check on one node: what was measured, against what, and the verdict."""

    check_id: str = Field(description="HPCLZ-VFY-NNN")
    title: str
    status: Status
    message: str = ""
    measured: float | str | None = None
    threshold: float | str | None = None
    unit: str = ""
    nhc_code: str | None = Field(default=None, description="The aznhc / NHC check this mirrors, where one exists.")
    fix: str = ""
    duration_s: float = 0.0
    suppressed: bool = Field(
        default=False,
        description="Silenced by the config's suppress list or --suppress: still reported, but it fails, drains "
        "and counts nothing.",
    )
    inconclusive: bool = Field(
        default=False,
        description="Not measured because a tool crashed or gave no usable reading: neither a pass nor a device "
        "fault (the health gate drains for a re-test).",
    )


class GpuIdentity(BaseModel):
    """One GPU as nvidia-smi names it: what a Guest Health Report's GPU fields carry (SerialNumber, Location)."""

    index: int
    bus_id: str
    name: str = ""
    serial: str | None = None
    uuid: str | None = None


class NodeReport(BaseModel):
    node: str
    sku: str | None = None
    hostname: str | None = None
    physical_host: str | None = Field(
        default=None,
        description="Azure's physical host name (Hyper-V KVP pool 3), which a Guest Health Report prefers.",
    )
    gpus: list[GpuIdentity] = Field(default_factory=list)
    tier: str = "health"
    duration_s: float = 0.0
    checks: list[CheckResult] = Field(default_factory=list)

    @property
    def status(self) -> Status:
        counted = (c.status for c in self.checks if not c.suppressed)
        return max(counted, key=lambda s: s.rank, default=Status.PASS)

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status is Status.FAIL and not c.suppressed]

    def silence(self, check_ids: set[str]) -> None:
        for check in self.checks:
            check.suppressed = check.suppressed or check.check_id.upper() in check_ids


class BandwidthPoint(BaseModel):
    size_bytes: int
    time_us: float
    algbw_gbps: float
    busbw_gbps: float


class CollectiveResult(BaseModel):
    """One all-reduce run: intra-node, a node pair, or all nodes."""

    name: str
    nodes: list[str]
    backend: str = Field(description="nccl, gloo, or nccl-tests")
    ranks: int
    points: list[BandwidthPoint] = Field(default_factory=list)
    threshold_busbw_gbps: float | None = None
    status: Status = Status.NOT_MEASURED
    message: str = ""

    def largest(self) -> BandwidthPoint | None:
        """The point at the largest message size, the one that reflects the links rather than latency."""
        return max(self.points, key=lambda p: p.size_bytes, default=None)


class WorkloadRun(BaseModel):
    """One training run of the workload proof: on one node, or across several; figures are medians over the
    timed iterations (the first few, which include compilation and warm-up, are left out)."""

    name: str
    nodes: list[str]
    gpus: int
    iterations: int = 0
    step_s: float | None = None
    tokens_per_s_per_gpu: float | None = None
    tflops_per_gpu: float | None = None
    mfu: float | None = None
    loss_first: float | None = None
    loss_last: float | None = None
    log: str = Field(default="", description="Where the run's job log is, for a person to read.")


class WorkloadReport(BaseModel):
    """The training proof (hpclz verify --workload): the job chain's steps, its runs and their verdicts."""

    model: dict[str, int] = Field(default_factory=dict, description="layers, hidden, heads, seq_length, vocab...")
    parameters: int = 0
    steps: dict[str, str] = Field(default_factory=dict, description="chain step -> its final Slurm state")
    runs: list[WorkloadRun] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)
    weak_scaling: float | None = None

    @property
    def status(self) -> Status:
        counted = (c.status for c in self.checks if not c.suppressed)
        return max(counted, key=lambda s: s.rank, default=Status.NOT_MEASURED)


class VerifyReport(BaseModel):
    landing_zone: str | None = None
    nodes: list[NodeReport] = Field(default_factory=list)
    collectives: list[CollectiveResult] = Field(default_factory=list)
    workload: WorkloadReport | None = None
    bad_nodes: dict[str, list[str]] = Field(default_factory=dict, description="node -> reasons")
    slow_racks: dict[str, str] = Field(
        default_factory=dict,
        description="rack (NVLink domain, its Slurm block) -> why: a rack whose own all-reduce is slow while no node "
        "in it stands out",
    )
    drained: list[str] = Field(default_factory=list)
    resumed: list[str] = Field(default_factory=list)
    duration_s: float = 0.0
