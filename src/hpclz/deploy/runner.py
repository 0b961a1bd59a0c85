"""Apply a DeploymentPlan: dependency order, independent deployments in parallel, resumable, idempotent.

Each deployment is skipped when state says it succeeded with the same template hash; otherwise ARM is
asked first (GET): a deployment still Running/Accepted with our hash is re-attached, one that Succeeded
with our hash is adopted, anything else is submitted. hpclz polls ARM itself to report every resource
operation as it changes. State is written after each submit (RUNNING + ARM id) and each finish.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from hpclz.azure.arm import Arm, deployment_body
from hpclz.azure.errors import ArmFailure, WaitCancelled, describe, innermost, sdk_error
from hpclz.deploy.nested import CANCELABLE, cancel_nested, collect, is_nested_operation, merged
from hpclz.deploy.records import (
    HASH_TAG,
    assignment_ids,
    declared_types,
    outputs_of,
    referenced_identities,
    resource_records,
)
from hpclz.deploy.timeouts import deployment_budget
from hpclz.plan.unchanged import deployment_unchanged
from hpclz.render.model import MANAGED_TAG, Deployment, DeploymentPlan
from hpclz.state.model import DeploymentRecord, DeploymentStatus, ResourceRecord, StateDocument, now

_T = TypeVar("_T")
ACTIVE = {"Accepted", "Running", "Created", "Creating", "Updating", "Deleting", "Ready", "Waiting"}


class Step(StrEnum):
    SKIPPED = "skipped"  # unchanged since the last successful run
    SUBMITTED = "submitted"
    ATTACHED = "attached"  # found running (or finished) in ARM from an earlier, interrupted run
    RESOURCE = "resource"  # one resource operation changed state
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    BLOCKED = "blocked"  # not started: something it depends on failed
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"  # destroy cancelled a run ARM still had going (Runner.settle)
    WAITING = "waiting"  # throttled or retrying: a bounded wait, counted down


@dataclass(frozen=True)
class Event:
    deployment: str
    step: Step
    message: str = ""
    resource_type: str | None = None
    resource_name: str | None = None
    state: str | None = None


@dataclass
class RunResult:
    status: dict[str, Step] = field(default_factory=dict)
    failures: dict[str, ArmFailure] = field(default_factory=dict)
    blocked: dict[str, list[str]] = field(default_factory=dict)
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return not self.failures and not self.blocked and not self.interrupted


class _Interrupted(Exception):
    pass


class _TimedOut(Exception):
    def __init__(self, failure: ArmFailure):
        super().__init__(failure.message)
        self.failure = failure


class Runner:
    def __init__(
        self,
        arm: Arm,
        plan: DeploymentPlan,
        doc: StateDocument,
        save: Callable[[StateDocument], StateDocument],
        *,
        secrets: Mapping[str, Mapping[str, str]] | None = None,
        on_event: Callable[[Event], None] = lambda _e: None,
        poll_interval: float = 10.0,
        max_workers: int = 8,
        deletes: Collection[str] = (),
        before_submit: Callable[[Deployment], ArmFailure | None] = lambda _d: None,
        resubmit: Collection[str] = (),
        merge_records: bool = False,
    ):
        self.arm = arm
        self.plan = plan
        self.doc = doc
        self._save = save
        self._secrets = secrets or {}
        self._emit = on_event
        self._poll = poll_interval
        self._workers = max_workers
        self._doc_lock = threading.Lock()
        self.stop = threading.Event()
        # Lower-cased IDs the change set deletes: their records stay in state (pending_delete) until deleted.
        self._deletes = {i.lower() for i in deletes}
        self.before_submit = before_submit  # a caller may wrap it (deploy's wheel upload goes first)
        self._resubmit = set(resubmit)  # a rotated secret: same template, new value
        self._failures: dict[str, ArmFailure] = {}
        # Destroy settling a cancelled run: what an earlier run of the deployment made stays recorded beside what
        # this one reached, since a cancelled or failed run's operations list only what it touched.
        self._merge = merge_records
        self._cancelling = False  # destroy settling: a nested run still going is cancelled, not waited for

    @property
    def failures(self) -> dict[str, ArmFailure]:
        return dict(self._failures)

    # ----- state -----
    def _record(self, record: DeploymentRecord, resources: list[Any] | None = None) -> None:
        with self._doc_lock:
            doc = self.doc.model_copy(deep=True)
            doc.deployments[record.name] = record
            if resources is not None:
                new = {r.id.lower() for r in resources}
                kept = [
                    r for r in doc.resources if r.deployment != record.name or (self._merge and r.id.lower() not in new)
                ]
                pending = [
                    r.model_copy(update={"pending_delete": True})
                    for r in doc.resources
                    if r.deployment == record.name and r.id.lower() in self._deletes and r.id.lower() not in new
                ]
                doc.resources = kept + pending + resources
                doc.outputs = {k: v for k, v in doc.outputs.items() if not k.startswith(f"{record.component}.")}
                doc.outputs.update({f"{record.component}.{k}": v for k, v in record.outputs.items()})
            doc.updated_at = now()
            self.doc = self._save(doc)

    # ----- one deployment -----
    def _deploy(self, d: Deployment) -> Step:
        digest = d.template_hash()
        if deployment_unchanged(self.doc, d, digest) and d.name not in self._resubmit:
            self._emit(Event(d.name, Step.SKIPPED, "unchanged since the last deploy"))
            return Step.SKIPPED
        remote = self.arm.get_deployment(d)
        remote_state = _state(remote)
        ours = remote is not None and (remote.get("tags") or {}).get(HASH_TAG) == digest
        # A run whose resources hpclz has since deleted (destroy, or the component switched off and pruned) made
        # nothing that is still there: it is submitted again, never adopted. ARM keeps the last run of each name
        # in the history, so a portal turned off and on again finds its first run there, Succeeded, with this hash.
        taken_down = _correlation(remote) is not None and self.doc.destroyed_runs.get(d.name) == _correlation(remote)
        adoptable = remote_state in ACTIVE or (
            remote_state == "Succeeded" and d.name not in self._resubmit and not taken_down
        )
        if ours and adoptable:
            self._emit(Event(d.name, Step.ATTACHED, f"found in ARM ({remote_state}); not submitting again"))
            previous = self.doc.deployments.get(d.name)
            started = previous.started_at if previous else now()
        else:
            refused = self.before_submit(d)  # replacements: the old resource goes before the new one is made
            if refused is not None:
                self._failures[d.name] = refused
                self._emit(Event(d.name, Step.FAILED, refused.one_line()))
                return Step.FAILED
            tags = {MANAGED_TAG: "true", HASH_TAG: digest}
            remote = self.arm.submit(d, deployment_body(d, self._secrets.get(d.name, {}), tags))
            started = now()
            self._emit(Event(d.name, Step.SUBMITTED, f"{d.component} -> {d.resource_group or 'subscription'}"))
        return self._attach(d, remote, digest, started)

    def _attach(self, d: Deployment, remote: dict[str, Any] | None, digest: str, started: datetime | None) -> Step:
        """Record the run as RUNNING (its ARM id and correlation ID), follow it to its end and record what it made."""
        record = DeploymentRecord(
            name=d.name,
            component=d.component,
            scope=d.scope.value,
            resource_group=d.resource_group,
            template_hash=digest,
            status=DeploymentStatus.RUNNING,
            arm_id=(remote or {}).get("id"),
            correlation_id=((remote or {}).get("properties") or {}).get("correlationId"),
            started_at=started,
        )
        self._record(record)
        remote, operations = self._follow(d)
        return self._finish(d, record, remote, operations)

    def cancel(self, d: Deployment, remote: dict[str, Any]) -> None:
        """Destroy's first step with a run ARM still has going: stop it, so that it creates nothing more while
        destroy deletes. Deployments - Cancel: "You can cancel a deployment only if the provisioningState is
        Accepted or Running. After the deployment is canceled, the provisioningState is set to Canceled ... leaves
        the resources partially deployed" (learn.microsoft.com/rest/api/resources/deployments/cancel)."""
        self._cancelling = True
        if _state(remote) in CANCELABLE:
            try:
                self.arm.cancel(d)
                self._emit(Event(d.name, Step.CANCELLED, f"(it was {_state(remote)} in ARM) before destroying"))
            except sdk_error() as exc:  # it ended between the read and the cancel: settle reads how
                self._emit(Event(d.name, Step.CANCELLED, f"could not cancel ({describe(exc).one_line()})"))
        try:
            cancel_nested(self.arm, d, lambda _inner, message: self._emit(Event(d.name, Step.CANCELLED, message)))
        except sdk_error() as exc:  # unreadable now: settle follows the nested runs and cancels what still runs
            self._emit(Event(d.name, Step.CANCELLED, f"could not read its nested runs ({describe(exc).one_line()})"))

    def settle(self, d: Deployment, remote: dict[str, Any]) -> Step:
        """Destroy's way in to a run state never saw finish (cancelled first where it still ran): followed to its
        end through the attach path and its resources recorded, so destroy deletes what it made instead of racing
        it. Never submits anything."""
        previous = self.doc.deployments.get(d.name)
        digest = (remote.get("tags") or {}).get(HASH_TAG) or (previous.template_hash if previous else "")
        try:
            return self._attach(d, remote, digest, previous.started_at if previous and previous.started_at else now())
        except _TimedOut as timeout:
            self._failures[d.name] = timeout.failure
            self._emit(Event(d.name, Step.FAILED, timeout.failure.one_line()))
            return Step.FAILED

    def _follow(self, d: Deployment) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Poll the run to its end, then the runs it nests (hpclz.deploy.nested): their operations and outputResources
        join the outer run's, since a failed or cancelled outer run lists none of what they made."""
        seen: dict[str, str] = {}
        settings = getattr(getattr(self.arm, "clients", None), "settings", None)
        budget, slowest = deployment_budget(declared_types(d.template), getattr(settings, "deploy_timeout", None))
        clock = _Clock(time.monotonic() + budget, budget, slowest)
        remote, operations = self._poll_run(d, d.name, seen, clock, nested=False)
        nested = collect(d, operations, lambda inner: self._poll_run(inner, d.name, seen, clock, nested=True))
        return merged(remote, nested), operations + [op for run in nested for op in run.operations]

    def _poll_run(
        self, d: Deployment, shown_as: str, seen: dict[str, str], clock: _Clock, nested: bool
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """One run (the outer one, or a nested one shown under `shown_as`) followed until ARM ends it; a nested run
        destroy finds still going is cancelled once. A nested run ARM no longer has reads as empty."""
        cancelled = False
        while True:
            remote = self.arm.get_deployment(d)
            if remote is None and nested:
                return {}, []
            remote = remote or {}
            operations = self.arm.operations(d)
            self._show(shown_as, operations, seen)
            state = _state(remote)
            if state not in ACTIVE:
                return remote, operations
            if nested and self._cancelling and not cancelled and state in CANCELABLE:
                cancelled = True
                self._cancel_nested_run(d, shown_as, str(state))
            if time.monotonic() > clock.deadline:
                raise _TimedOut(clock.failure(remote))
            if self.stop.wait(self._poll):
                raise _Interrupted

    def _cancel_nested_run(self, d: Deployment, shown_as: str, state: str) -> None:
        try:
            self.arm.cancel(d)
            self._emit(Event(shown_as, Step.CANCELLED, f"nested run {d.name} (it was {state} in ARM)"))
        except sdk_error() as exc:  # it ended between the read and the cancel: the next read says how
            self._emit(
                Event(shown_as, Step.CANCELLED, f"could not cancel nested run {d.name} ({describe(exc).one_line()})")
            )

    def _show(self, name: str, operations: list[dict[str, Any]], seen: dict[str, str]) -> None:
        for op in operations:
            props = op.get("properties") or {}
            target = props.get("targetResource") or {}
            key, state = str(target.get("id") or op.get("operationId")), str(props.get("provisioningState"))
            if target and seen.get(key) != state:
                seen[key] = state
                self._emit(
                    Event(name, Step.RESOURCE, "", target.get("resourceType"), target.get("resourceName"), state)
                )

    def _finish(
        self, d: Deployment, record: DeploymentRecord, remote: dict[str, Any], operations: list[dict[str, Any]]
    ) -> Step:
        state = _state(remote)
        if state == "Succeeded":
            done = record.model_copy(
                update={"status": DeploymentStatus.SUCCEEDED, "finished_at": now(), "outputs": outputs_of(remote)}
            )
            self._record(done, self._resources(d, remote, operations))
            self._emit(Event(d.name, Step.SUCCEEDED, f"{len(operations)} resource operations"))
            return Step.SUCCEEDED
        failure = _failure(remote, operations) if state != "Canceled" else _cancelled(remote)
        status = DeploymentStatus.CANCELED if state == "Canceled" else DeploymentStatus.FAILED
        # What did get created is recorded too, so destroy can find it after a failed deploy.
        self._record(
            record.model_copy(update={"status": status, "finished_at": now(), "error": failure.one_line()}),
            self._resources(d, remote, operations),
        )
        self._failures[d.name] = failure
        shown = Step.CANCELLED if state == "Canceled" else Step.FAILED
        self._emit(Event(d.name, shown, failure.one_line()))
        return Step.FAILED

    def _resources(
        self, d: Deployment, remote: dict[str, Any], operations: list[dict[str, Any]]
    ) -> list[ResourceRecord]:
        """State records for what ARM applied. ARM's outputResources carry only IDs, and role assignments are
        named by a GUID: each one is read back (and the identities they name), so its recorded body is the
        one it really is, whatever order ARM lists them in. Destroy deletes by the recorded ID."""
        assignments = assignment_ids(remote, operations)
        fetched = {rid: props for rid in assignments if (props := self._quietly(self.arm.role_assignment, rid))}
        principals: dict[str, str] = {}
        for identity in sorted(referenced_identities(d)) if assignments else []:
            principal = self._quietly(self.arm.identity_principal, self._full_id(d, identity))
            if principal:
                principals[identity] = principal
        return resource_records(d, remote, operations, fetched=fetched, principals=principals)

    def _full_id(self, d: Deployment, key: str) -> str:
        """An `id_key` (no subscription; no group where the template named none) as a full resource ID."""
        group = (
            "" if key.startswith("/resourcegroups/") or not d.resource_group else f"/resourceGroups/{d.resource_group}"
        )
        return f"/subscriptions/{self.arm.subscription_id}{group}{key}"

    @staticmethod
    def _quietly(get: Callable[[str], _T | None], resource_id: str) -> _T | None:
        """A read that fails leaves the deployment succeeded: its records fall back to pairing in ARM's order."""
        try:
            return get(resource_id)
        except sdk_error():
            return None

    # ----- the whole plan -----
    def run(self) -> RunResult:
        self.plan.waves()  # refuses a dependency cycle before anything is submitted
        result = RunResult()
        self._failures = {}
        pending = {d.name: d for d in self.plan.deployments}
        running: dict[Future[Step], str] = {}
        pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="hpclz-deploy")
        try:
            while pending or running:
                self._block_dependants(pending, result)
                for name in [n for n, d in pending.items() if all(result.status.get(x) in _DONE for x in d.depends_on)]:
                    running[pool.submit(self._guarded, pending.pop(name))] = name
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    name = running.pop(future)
                    result.status[name] = future.result()
                    if result.status[name] is Step.INTERRUPTED:
                        result.interrupted = True
        except BaseException:
            # Ctrl-C or a failed state write: stop polling and any wait between retries at once; what ARM
            # runs stays recorded as RUNNING in state.
            self.stop.set()
            clients = getattr(self.arm, "clients", None)
            if clients is not None:
                clients.cancel.set()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            result.failures = dict(self._failures)
        return result

    def _guarded(self, d: Deployment) -> Step:
        if self.stop.is_set():
            return Step.INTERRUPTED
        try:
            return self._deploy(d)
        except (_Interrupted, WaitCancelled):
            self._emit(Event(d.name, Step.INTERRUPTED, "left running in ARM; rerun deploy to re-attach"))
            return Step.INTERRUPTED
        except _TimedOut as timeout:
            self._failures[d.name] = timeout.failure
            self._emit(Event(d.name, Step.FAILED, timeout.failure.one_line()))
            return Step.FAILED
        except Exception as exc:  # an unreachable ARM or a refused call fails this deployment, not the others
            if not isinstance(exc, sdk_error()):
                raise
            failure = describe(exc)
            self._failures[d.name] = failure
            self._emit(Event(d.name, Step.FAILED, failure.one_line()))
            return Step.FAILED

    def _block_dependants(self, pending: dict[str, Deployment], result: RunResult) -> None:
        changed = True
        while changed:
            changed = False
            for name, d in list(pending.items()):
                bad = [x for x in d.depends_on if result.status.get(x) in (Step.FAILED, Step.BLOCKED, Step.INTERRUPTED)]
                if bad:
                    del pending[name]
                    result.status[name] = Step.BLOCKED
                    result.blocked[name] = bad
                    self._emit(Event(name, Step.BLOCKED, f"not started: {', '.join(bad)} did not succeed"))
                    changed = True


_DONE = (Step.SKIPPED, Step.SUCCEEDED)


@dataclass(frozen=True)
class _Clock:
    """How long one deployment (its nested runs included) may take before hpclz stops waiting."""

    deadline: float
    budget: float
    slowest: str

    def failure(self, remote: dict[str, Any]) -> ArmFailure:
        return ArmFailure(
            "DeploymentTimeout",
            f"still {_state(remote)} after {self.budget / 60:g} min, longer than {self.slowest} should take; "
            "hpclz stopped waiting but ARM carries on: rerun deploy to re-attach, or cancel it in Azure",
            remote.get("id"),
        )


def _correlation(remote: dict[str, Any] | None) -> str | None:
    value = ((remote or {}).get("properties") or {}).get("correlationId")
    return str(value) if value else None


def _state(remote: dict[str, Any] | None) -> str | None:
    return ((remote or {}).get("properties") or {}).get("provisioningState")


def _cancelled(remote: dict[str, Any]) -> ArmFailure:
    """A cancelled run ends without an error of its own; what it did make is recorded all the same."""
    error = (remote.get("properties") or {}).get("error")
    if error:
        return innermost(error)
    return ArmFailure(
        "DeploymentCanceled", "cancelled in ARM before it finished; what it made is recorded", remote.get("id")
    )


def _failure(remote: dict[str, Any], operations: list[dict[str, Any]]) -> ArmFailure:
    """The failed resource operation says most (code, message, target); the deployment error is the fallback."""
    # A nested deployment's own operation carries only "At least one resource deployment operation failed": the
    # failed resource inside it, listed after it, says what went wrong.
    for op in sorted(operations, key=is_nested_operation):
        props = op.get("properties") or {}
        if props.get("provisioningState") == "Failed" and props.get("statusMessage"):
            target = (props.get("targetResource") or {}).get("id")
            message = props["statusMessage"]
            return innermost(message if isinstance(message, dict) else {"message": str(message)}, target)
    return innermost((remote.get("properties") or {}).get("error"))
