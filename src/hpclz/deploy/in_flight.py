"""Before destroy deletes anything: the hpclz deployments that an interrupted deploy left running in ARM, or that ran
without state seeing them finish, are settled and what they made is taken into state.

Destroy deletes what state lists. After `kill -9` during deploy, state holds RUNNING records (the runner writes one
right after each submit) and, for a submit whose record never landed, nothing at all. A run still going would
create resources while destroy deletes their groups, and what a run made outside hpclz's groups (a VNet flow log in
NetworkWatcherRG, Defender pricings, the activity log's diagnostic settings, role assignments) would be left behind.

So destroy reads each hpclz deployment in ARM first (Deployments - Get), cancels a run that is still Accepted or
Running (Deployments - Cancel, which ARM allows only in those two states), follows it to its end through the
runner's attach path, and records its `properties.outputResources` and succeeded operations' targets the way a
finished deploy does (`DeploymentPropertiesExtended.output_resources` in azure-mgmt-resource;
azure-rest-api-specs specification/resources/resource-manager/Microsoft.Resources/stable/2024-03-01/resources.json,
DeploymentPropertiesExtended.outputResources: "Array of provisioned resources.").
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from hpclz.azure.arm import Arm
from hpclz.azure.errors import ArmFailure
from hpclz.deploy.runner import Runner
from hpclz.render.model import MANAGED_TAG, Deployment, DeploymentPlan, Scope
from hpclz.state.model import DeploymentRecord, DeploymentStatus, StateDocument

RECORDED_RUNNING = "recorded in state as running"
UNRECORDED = "run by a deploy that state never saw finish"


@dataclass(frozen=True)
class InFlight:
    deployment: Deployment
    remote: dict[str, Any]
    why: str

    @property
    def arm_state(self) -> str:
        return str((self.remote.get("properties") or {}).get("provisioningState", "Unknown"))

    def as_dict(self) -> dict[str, str]:
        return {"deployment": self.deployment.name, "arm_state": self.arm_state, "why": self.why}


def _correlation(remote: dict[str, Any]) -> str | None:
    value = (remote.get("properties") or {}).get("correlationId")
    return str(value) if value else None


def why_in_flight(doc: StateDocument, name: str, remote: dict[str, Any] | None) -> str | None:
    """Why destroy must take this ARM run in, or None when state already holds what it made."""
    if remote is None or (remote.get("tags") or {}).get(MANAGED_TAG) != "true":
        return None  # not there, or not hpclz's: a deployment someone else named like ours is not ours to read
    record = doc.deployments.get(name)
    if record is not None and record.status is DeploymentStatus.RUNNING:
        return RECORDED_RUNNING
    run = _correlation(remote)
    if record is not None and record.correlation_id == run:
        return None  # this very run finished and state recorded it
    if run is not None and doc.destroyed_runs.get(name) == run:
        return None  # an earlier destroy already took this run down
    return UNRECORDED


def from_record(record: DeploymentRecord, location: str) -> Deployment:
    """A deployment state recorded as running whose config no longer renders it: its template is unknown, so its
    resources are recorded from ARM's IDs alone."""
    return Deployment(
        name=record.name,
        component=record.component,
        scope=Scope(record.scope),
        resource_group=record.resource_group,
        location=location,
        template={},
    )


def candidates(doc: StateDocument, planned: list[Deployment]) -> list[Deployment]:
    by_name = {d.name: d for d in planned}
    for name, record in doc.deployments.items():
        if record.status is DeploymentStatus.RUNNING and name not in by_name:
            by_name[name] = from_record(record, doc.location or "")
    return list(by_name.values())


def find_in_flight(arm: Arm, doc: StateDocument, planned: list[Deployment]) -> list[InFlight]:
    """Reads only: one Deployments - Get per hpclz deployment (8 at a time), nothing changed in Azure."""
    wanted = candidates(doc, planned)
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="hpclz-in-flight") as pool:
        remotes = list(pool.map(arm.get_deployment, wanted))
    found: list[InFlight] = []
    for d, remote in zip(wanted, remotes, strict=True):
        why = why_in_flight(doc, d.name, remote)
        if why is not None and remote is not None:
            found.append(InFlight(d, remote, why))
    return found


def settle(
    arm: Arm,
    doc: StateDocument,
    found: list[InFlight],
    save: Callable[[StateDocument], StateDocument],
    *,
    on_event: Callable[[Any], None] = lambda _e: None,
    poll_interval: float = 10.0,
) -> tuple[StateDocument, dict[str, ArmFailure]]:
    """Cancel what still runs, wait for each run's end and record its resources (state is written after each)."""
    plan = DeploymentPlan(
        landing_zone=doc.landing_zone,
        environment=doc.environment,
        location=doc.location or "",
        config_hash=doc.config_hash,
        deployments=[f.deployment for f in found],
    )
    runner = Runner(arm, plan, doc, save, on_event=on_event, poll_interval=poll_interval, merge_records=True)
    for f in found:  # all at once: a run left going while another is followed would go on creating
        runner.cancel(f.deployment, f.remote)
    for f in found:
        runner.settle(f.deployment, f.remote)
    return runner.doc, runner.failures


def still_running(failures: dict[str, ArmFailure]) -> dict[str, ArmFailure]:
    """Runs hpclz stopped waiting for while ARM still had them going: destroying now would race them."""
    return {name: f for name, f in failures.items() if f.code == "DeploymentTimeout"}
