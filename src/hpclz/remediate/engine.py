"""The remediation state machine: each `step` makes one transition of one incident and saves it.

    detected --drain--> drained --classify--> acting --reboot/reimage--> checking --pass--> returning --> returned
                                                 ^                          |
                                                 +------ fail: next rung ---+
                                              acting --report--> retired
    detected --(node drained by another tool)--> deferred

Every action is safe to repeat, because a process killed between doing one and saving that it was done does it
again on resume: a drain or resume of a node already in that state changes nothing in Slurm; a Guest Health Report
is a PUT to a name fixed per incident (createOrUpdate, so one report); a second restart or reimage costs minutes,
not correctness. Nothing is done twice in the other order: the state is saved before the next action starts.

Coexistence with CycleCloud's healthagent: its HealthCheckProgram drains only an idle node, with the reason
"Healthcheck failures. ...", and resumes only a node whose reason starts with "Healthcheck failures"
(Azure/cyclecloud-healthagent healthagent/etc/health.sh.example @3c7e2da). hpclz's reasons start with
`REPAIR_PREFIX`, so healthagent never resumes a node hpclz holds; hpclz leaves a node drained for any reason not its
own (healthagent's included) to whoever drained it, and never resumes a node someone re-drained meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from hpclz.remediate.classify import REBOOT, REPORT, worst
from hpclz.remediate.model import IN_REPAIR, Event, Evidence, Incident, RemediationState, Stage
from hpclz.remediate.store import Store
from hpclz.slurm.client import DRAIN_PREFIX, REPAIR_PREFIX, ROLL_PREFIX, NodeInfo
from hpclz.verify.model import NodeReport, Status

HEALTHAGENT_REASON = "Healthcheck failures"
OUTCOME_PREFIX = "HPCLZ-VFY-9"  # outcomes the head node observes (hpclz.verify.checks.outcomes), not the device
PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"


class Scheduler(Protocol):
    def nodes(self, partition: str | None = None, nodelist: str | None = None) -> list[NodeInfo]: ...
    def drain(self, node: str, reason: str) -> None: ...
    def resume(self, node: str) -> None: ...


class Fleet(Protocol):
    def restart(self, node: str) -> None: ...
    def reimage(self, node: str) -> None: ...
    def report(self, incident: Incident) -> str: ...


@dataclass(frozen=True)
class Verdict:
    outcome: str  # PASS, FAIL or INCONCLUSIVE (a check that could not run, or a tool that failed: not a pass)
    evidence: tuple[Evidence, ...] = ()


class Checker(Protocol):
    def check(self, node: str) -> Verdict: ...


@dataclass(frozen=True)
class Policy:
    max_out_percent: float = 10.0  # of a partition's nodes held out for repair (or retired) at once
    strike_limit: int = 3  # incidents within the window after which a node is reported at once
    strike_window: timedelta = timedelta(days=7)
    max_inconclusive: int = 3  # checks that could not decide, after which the node counts as failing
    dry_run: bool = False


def verdict_of(report: NodeReport) -> Verdict:
    """A verify report as a verdict: failed checks fail it; a report with nothing measured decides nothing, and
    neither does one in which the head node saw the job or the agent fail (HPCLZ-VFY-9xx, hpclz.verify.checks.
    outcomes: no result, a timeout, a crash): a failed tool is not a failed device."""
    failed = tuple(
        Evidence(check_id=c.check_id, message=c.message, nhc_code=c.nhc_code)
        for c in report.checks
        if c.status == Status.FAIL and not c.suppressed
    )
    if any(e.check_id.startswith(OUTCOME_PREFIX) for e in failed):
        return Verdict(INCONCLUSIVE, failed)
    if failed:
        return Verdict(FAIL, failed)
    if not any(c.status == Status.PASS for c in report.checks):
        return Verdict(INCONCLUSIVE)
    if any(c.inconclusive and not c.suppressed for c in report.checks):  # a tool crashed after it printed
        return Verdict(INCONCLUSIVE)
    return Verdict(PASS)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Remediator:
    store: Store
    scheduler: Scheduler
    fleet: Fleet
    checker: Checker
    policy: Policy = field(default_factory=Policy)
    clock: Callable[[], datetime] = _now

    # ----- detection -----
    def observe(self, reports: Iterable[NodeReport]) -> list[Incident]:
        """Open an incident for each node whose report failed (or add the evidence to its open one)."""
        state = self.store.load()
        opened: list[Incident] = []
        for report in reports:
            verdict = verdict_of(report)
            if verdict.outcome != FAIL:
                continue
            incident = state.open_for(report.node) or self._open(state, report.node)
            if incident not in opened and not incident.evidence:
                opened.append(incident)
            incident.evidence.extend(e for e in verdict.evidence if e not in incident.evidence)
            incident.physical_host = report.physical_host or incident.physical_host
            incident.gpu_serials.update({g.bus_id: g.serial for g in report.gpus if g.serial})
        if opened:
            for incident in opened:
                self._log(incident, Stage.DETECTED, Stage.DETECTED, None, _summary(incident))
            self.store.save(state)
        return opened

    def _open(self, state: RemediationState, node: str) -> Incident:
        now = self.clock()
        incident = Incident(id=f"{state.next_id:04d}", node=node, detected_at=now.isoformat())
        state.next_id += 1
        state.incidents[incident.id] = incident
        state.strikes.setdefault(node, []).append(now.isoformat())
        return incident

    # ----- the loop -----
    def run(self, max_steps: int = 1000) -> list[Event]:
        """Step every open incident until none moves (each waits on a check, the budget, or is done)."""
        events: list[Event] = []
        for _ in range(max_steps):
            moved = [e for e in (self.step(i.id) for i in self._open_incidents()) if e is not None]
            events += moved
            if not moved or self.policy.dry_run:
                break
        return events

    def _open_incidents(self) -> list[Incident]:
        return [i for i in self.store.load().incidents.values() if i.open]

    def step(self, incident_id: str) -> Event | None:
        state = self.store.load()
        incident = state.incidents[incident_id]
        before = incident.stage
        handler = {
            Stage.DETECTED: self._drain,
            Stage.DRAINED: self._classify,
            Stage.ACTING: self._act,
            Stage.CHECKING: self._check,
            Stage.RETURNING: self._return,
        }.get(before)
        if handler is None:
            return None
        action = incident.action if before == Stage.ACTING else None
        detail = handler(state, incident)
        if detail is None:  # waiting: nothing changed but maybe the note
            if not self.policy.dry_run:
                self.store.save(state)
            return None
        event = self._log(incident, before, incident.stage, action, detail)
        if not self.policy.dry_run:
            self.store.save(state)
        return event

    # ----- transitions: each returns what it did, or None when it must wait -----
    def _drain(self, _state: RemediationState, incident: Incident) -> str | None:
        info = self._info(incident.node)
        incident.partitions = list(info.partitions) if info else incident.partitions
        owner = _other_owner(info)
        if owner:
            incident.stage = Stage.DEFERRED
            incident.note = f"drained by {owner}; left to it"
            incident.closed_at = self.clock().isoformat()
            return incident.note
        if not self.policy.dry_run:
            self.scheduler.drain(incident.node, f"{REPAIR_PREFIX} {incident.id} {_summary(incident)}")
        incident.stage = Stage.DRAINED
        return "drained"

    def _classify(self, state: RemediationState, incident: Incident) -> str:
        fault = worst([e.nhc_code for e in incident.evidence])
        incident.fault_code, incident.category, incident.ladder = fault.code, fault.category, list(fault.ladder)
        strikes = self._strikes(state, incident.node)
        if strikes >= self.policy.strike_limit and incident.ladder != [REPORT]:
            incident.ladder = [REPORT]
            incident.note = f"strike {strikes} in {self.policy.strike_window.days} days: reported without retrying"
        incident.stage = Stage.ACTING
        return f"{fault.code} {fault.category}: {' -> '.join(incident.ladder)}"

    def _act(self, state: RemediationState, incident: Incident) -> str | None:
        action = incident.action
        waiting = self._budget(state, incident)
        if waiting:
            incident.note = waiting
            return None
        if incident.note.startswith("waiting"):
            incident.note = ""
        if action == REPORT:
            if not self.policy.dry_run:
                incident.report_id = self.fleet.report(incident)
                self.scheduler.drain(
                    incident.node, f"{REPAIR_PREFIX} {incident.id} retired: {incident.category} reported to Azure"
                )
            incident.actions_done.append(REPORT)
            incident.stage = Stage.RETIRED
            incident.closed_at = self.clock().isoformat()
            return f"filed {incident.report_name}"
        if not self.policy.dry_run:
            (self.fleet.restart if action == REBOOT else self.fleet.reimage)(incident.node)
        incident.actions_done.append(str(action))
        incident.inconclusive_checks = 0
        incident.stage = Stage.CHECKING
        return str(action)

    def _check(self, _state: RemediationState, incident: Incident) -> str | None:
        verdict = self.checker.check(incident.node)
        if verdict.outcome == INCONCLUSIVE:
            incident.inconclusive_checks += 1
            if incident.inconclusive_checks < self.policy.max_inconclusive:
                incident.note = f"check inconclusive ({incident.inconclusive_checks})"
                return None
        if verdict.outcome == PASS:
            incident.stage = Stage.RETURNING
            return "check passed"
        incident.evidence.extend(e for e in verdict.evidence if e not in incident.evidence)
        incident.rung = min(incident.rung + 1, len(incident.ladder) - 1)
        incident.stage = Stage.ACTING
        return f"check failed after {incident.actions_done[-1]}: next {incident.action}"

    def _return(self, _state: RemediationState, incident: Incident) -> str:
        info = self._info(incident.node)
        ours = info is not None and info.reason.startswith(REPAIR_PREFIX)
        if ours and not self.policy.dry_run:
            self.scheduler.resume(incident.node)
        incident.stage = Stage.RETURNED
        incident.closed_at = self.clock().isoformat()
        if not ours:
            incident.note = f"not resumed: now drained by someone else ({info.reason if info else 'node gone'})"
            return incident.note
        return "resumed"

    # ----- helpers -----
    def _info(self, node: str) -> NodeInfo | None:
        found = self.scheduler.nodes(nodelist=node)
        return found[0] if found else None

    def _strikes(self, state: RemediationState, node: str) -> int:
        since = self.clock() - self.policy.strike_window
        return sum(1 for t in state.strikes.get(node, []) if datetime.fromisoformat(t) >= since)

    def _budget(self, state: RemediationState, incident: Incident) -> str | None:
        """Why acting on this node now would take more of one of its partitions out for repair than the policy
        allows (nodes hpclz is repairing, or retired within the strike window), or None when it may act."""
        since = self.clock() - self.policy.strike_window
        held = [
            other
            for other in state.incidents.values()
            if other.id != incident.id
            and (
                (other.stage in IN_REPAIR and other.actions_done)
                or (other.stage == Stage.RETIRED and datetime.fromisoformat(other.closed_at or "") >= since)
            )
        ]
        for partition in incident.partitions:
            size = len(self.scheduler.nodes(partition=partition))
            limit = max(1, math.floor(size * self.policy.max_out_percent / 100))
            out = sum(1 for other in held if partition in other.partitions)
            if out + 1 > limit:
                return f"waiting: {out} of {limit} nodes allowed out for repair in partition {partition}"
        return None

    def _log(self, incident: Incident, before: Stage, after: Stage, action: str | None, detail: str) -> Event:
        event = Event(
            time=self.clock().isoformat(),
            incident=incident.id,
            node=incident.node,
            stage_from=before,
            stage_to=after,
            action=action,
            detail=detail,
            dry_run=self.policy.dry_run,
        )
        if not self.policy.dry_run:
            self.store.record(event)
        return event


def _other_owner(info: NodeInfo | None) -> str | None:
    """Who else drained the node, if someone did: hpclz's own verify drain is taken over, a roll's is not."""
    if info is None or not info.reason or not info.base.startswith("drain"):
        return None
    if info.reason.startswith(HEALTHAGENT_REASON):
        return f"CycleCloud healthagent ({info.reason})"
    if info.reason.startswith(ROLL_PREFIX):
        return f"hpclz nodes roll ({info.reason})"
    if info.reason.startswith(DRAIN_PREFIX):
        return None
    return f"someone else ({info.reason})"


def _summary(incident: Incident) -> str:
    first = incident.evidence[0] if incident.evidence else None
    return f"{first.check_id} {first.message}" if first else ""
