"""Fan a command out to every node through Slurm, collect each node's JSON report, drain and resume.

How a run goes: nodes are split into jobs of at most `max_nodes_per_job` (aznhc's distributed runner
reports "No results reported" for every host past ~300 nodes in one job; ~100 is its fix). Each job
is one `sbatch` whose script runs one `srun` task per node; each task runs the node command under
`timeout` and leaves `<node>.rc`, `<node>.stdout`, `<node>.stderr` (and the report file the command
wrote) in a folder every node can see. The dispatcher polls `squeue` (faster than `sbatch --wait`),
cancels what overruns its budget, and reads the folder: a node without an `.rc` file reported
nothing, which is a failure in its own right.

The node side is plain bash and coreutils on purpose: it must work before hpclz itself is healthy.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from hpclz.slurm.client import DRAIN_PREFIX, FINISHED_STATES, NodeInfo, SlurmClient
from hpclz.verify.checks import outcomes
from hpclz.verify.checks.outcomes import OutcomeSpec
from hpclz.verify.model import CheckResult, NodeReport, Status

MAX_NODES_PER_JOB = 100
RESULT_PLACEHOLDER = "{result}"  # in a node command: the path where that node's report goes
POLL_S = 0.25
GRACE_S = 30  # Slurm's time limit exceeds the node budget by this, so `timeout` fires first and rc is kept
TAIL_CHARS = 400
RESULT_SUFFIXES = (".rc", ".stdout", ".stderr", ".report.json", ".missing")

# Outcomes the dispatcher itself observes (registered rules, hpclz.verify.checks.outcomes); node checks own 001..899.
NO_RESULT = outcomes.NO_RESULT.id
UNREACHABLE = outcomes.UNREACHABLE.id
NOT_TESTED = outcomes.NOT_TESTED.id
JOB_NOT_RUN = outcomes.JOB_NOT_RUN.id  # the job never ran the node command: a fault of the setup, never drained for
NO_AGENT = outcomes.NO_AGENT.id  # hpclz's node code is not on the node: a fault of the set-up, never drained for
NEVER_DRAINED = frozenset({JOB_NOT_RUN, NO_AGENT})


@dataclass(frozen=True)
class Start:
    """One way a node may start hpclz's node code: `argv` (its program found on the node's PATH, or by full path),
    usable only where the program and every one of `files` are there, as the node itself sees them."""

    argv: tuple[str, ...]
    files: tuple[str, ...] = ()

    def test(self) -> str:
        """The bash condition, true on a node that has this start."""
        found = [f"command -v {shlex.quote(self.argv[0])} >/dev/null 2>&1"]
        return " && ".join([*found, *(f"[ -r {shlex.quote(f)} ]" for f in self.files)])

    def text(self) -> str:
        return " ".join([self.argv[0], *self.files]) if self.files else self.argv[0]


@dataclass(frozen=True)
class NodeCode:
    """How a node starts hpclz's node code (the verify agent, a collective's rank): the first of `starts` the node
    has, tested on the node itself. The scheduler's own interpreter is one only where the node proves it has it:
    on the rendered cluster hpclz's venv is on the scheduler's own disk, and the nodes get only the single-file
    bundle the scheduler installs under /sched (hpclz.render.health_gate.HealthGate.bundle)."""

    starts: tuple[Start, ...]

    def choose(self, var: str, missing: str) -> str:
        """Bash that sets the array `var` to the first start this node has, else runs `missing` (its `$why` holds one
        line naming every start it lacks)."""
        lines = [f"if {s.test()}; then\n  {var}=({shlex.join(s.argv)})" for s in self.starts]
        why = "; ".join(s.text() for s in self.starts)
        gone = f'why={shlex.quote(outcomes.NO_AGENT_LINE)}"$node, which has none of: "{shlex.quote(why)}'
        return "\nel".join(lines) + f"\nelse\n  {gone}\n  {missing}\nfi\n"


def node_code(
    module: str, *, bundle: str | None, python: str | None, fallback: str | None, bundle_args: Sequence[str] = ()
) -> NodeCode:
    """How nodes start `module`: with `python` (an interpreter with hpclz that the operator put on every node) that
    alone; else python3 with the node bundle (hpclz.verify.bundle, whose __main__ runs the agent, or with
    `bundle_args` another of its entries), then `fallback` (the interpreter running verify) where a node has it."""
    if python:
        return NodeCode((Start((python, "-m", module)),))
    starts = [Start(("python3", bundle, *bundle_args), files=(bundle,))] if bundle else []
    starts += [Start((fallback, "-m", module))] if fallback else []
    if not starts:
        raise ValueError("no way to start hpclz on the nodes: no bundle, no interpreter")
    return NodeCode(tuple(starts))


@dataclass(frozen=True)
class FanOut:
    """What to run on each node, and within which limits. With `code`, `command` is what follows the start the node
    picks (NodeCode); without it, the command as it is."""

    command: Sequence[str]
    work_dir: Path
    node_budget_s: int = 600
    queue_wait_s: int = 300
    partition: str | None = None
    max_nodes_per_job: int = MAX_NODES_PER_JOB
    env: dict[str, str] = field(default_factory=dict)
    job_name: str = "hpclz-verify"
    code: NodeCode | None = None


def batches(nodes: Sequence[str], size: int = MAX_NODES_PER_JOB) -> list[list[str]]:
    """Split into near-equal jobs of at most `size` nodes (101 nodes: 51 + 50, not 100 + 1)."""
    if size < 1:
        raise ValueError("batch size must be at least 1")
    if not nodes:
        return []
    count = -(-len(nodes) // size)
    base, extra = divmod(len(nodes), count)
    bounds = [i * base + min(i, extra) for i in range(count + 1)]
    return [list(nodes[bounds[i] : bounds[i + 1]]) for i in range(count)]  # contiguous: short hostlists


def node_script(command: Sequence[str], folder: Path, budget_s: int, code: NodeCode | None = None) -> str:
    """The bash each srun task runs: the command under a timeout, its streams and rc kept per node. With `code`,
    the node first picks how it starts hpclz; a node with none of its starts leaves `<node>.missing` (one line)
    instead of running anything."""
    argv = " ".join('"$result"' if a == RESULT_PLACEHOLDER else shlex.quote(a) for a in command)
    missing = 'echo "$why" >"$base.missing.part" && mv "$base.missing.part" "$base.missing"\n  exit 0'
    pick = code.choose("start", missing) if code else ""
    run = f'"${{start[@]}}" {argv}' if code else argv
    return f"""#!/bin/bash
# Generated by hpclz verify. One copy runs on every node of the job.
node="${{SLURMD_NODENAME:-$(hostname -s)}}"
base={shlex.quote(str(folder))}/"$node"
result="$base.report.json"
export HPCLZ_NODE_RESULT="$result"
{pick}timeout --kill-after=10 {budget_s} {run} >"$base.stdout" 2>"$base.stderr"
echo $? >"$base.rc.part" && mv "$base.rc.part" "$base.rc"
"""


def job_script(folder: Path) -> str:
    return f"""#!/bin/bash
# Generated by hpclz verify: one task per node, all nodes at once; a failing node does not stop the others.
exec srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --kill-on-bad-exit=0 /bin/bash {shlex.quote(str(folder / "node.sh"))}
"""


def fan_out(
    client: SlurmClient, nodes: Sequence[str], plan: FanOut, *, reservation: str | None = None
) -> dict[str, NodeReport]:
    """Run `plan.command` on every node; every node gets a report, failures included."""
    folder = plan.work_dir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "node.sh").write_text(node_script(plan.command, folder, plan.node_budget_s, plan.code))
    (folder / "job.sh").write_text(job_script(folder))
    for node in nodes:  # a reused --work-dir must not hand an earlier run's result to this one
        for suffix in RESULT_SUFFIXES:
            (folder / f"{node}{suffix}").unlink(missing_ok=True)
    jobs: dict[str, tuple[list[str], Path]] = {}
    for i, group in enumerate(batches(nodes, plan.max_nodes_per_job)):
        output = folder / f"job-{i}.out"
        job_id = client.sbatch(
            folder / "job.sh",
            nodes=group,
            job_name=plan.job_name,
            time_limit_s=plan.node_budget_s + GRACE_S,
            output=output,
            partition=plan.partition,
            reservation=reservation,
            env=plan.env,
        )
        jobs[job_id] = (group, output)
    late = wait_for_jobs(
        client, list(jobs), start_within_s=plan.queue_wait_s, finish_within_s=plan.node_budget_s + GRACE_S
    )
    reports = {}
    for job_id, (group, output) in jobs.items():
        why, check_id = _why_missing(late.get(job_id), plan, output)
        reports.update({n: read_node(folder, n, plan.node_budget_s, missing=why, missing_id=check_id) for n in group})
    return {n: reports[n] for n in nodes}


def _why_missing(late_state: str | None, plan: FanOut, output: Path) -> tuple[str, str]:
    """What to say about a node that left no result, from what its job did, and whose fault that is."""
    if late_state == "PENDING":
        why = f"its job waited more than {plan.queue_wait_s} s for the nodes (busy, or held) and was cancelled"
        return why, JOB_NOT_RUN
    if late_state is not None:
        return f"its job overran the time budget ({late_state}) and was cancelled", NO_RESULT
    if not output.exists():
        return f"the job left no output either: is {output.parent} on a filesystem every node shares?", JOB_NOT_RUN
    return "the job ended without it", NO_RESULT


def wait_for_jobs(
    client: SlurmClient, job_ids: list[str], *, start_within_s: float, finish_within_s: float
) -> dict[str, str]:
    """Poll until every job has finished. A job still pending after `start_within_s`, or running longer than
    `finish_within_s` (from when it was first seen running), is given up on: cancelled, and returned with its
    last state."""
    submitted = time.monotonic()
    started: dict[str, float] = {}
    waiting = list(job_ids)
    late: dict[str, str] = {}
    while waiting:
        states = client.job_states(waiting)
        now = time.monotonic()
        still = []
        for job in waiting:
            state = states[job]
            if state in FINISHED_STATES:
                continue
            if state != "PENDING":
                started.setdefault(job, now)
            overdue = now - started[job] > finish_within_s if job in started else now - submitted > start_within_s
            if overdue:
                late[job] = state
            else:
                still.append(job)
        waiting = still
        if waiting:
            time.sleep(POLL_S)
    client.cancel(list(late))
    return late


def read_node(
    folder: Path, node: str, budget_s: int, *, missing: str = "the job ended without it", missing_id: str = NO_RESULT
) -> NodeReport:
    gone = folder / f"{node}.missing"
    if gone.exists():  # the node has none of the ways to start hpclz: it ran nothing, so nothing is known of it
        return failed(node, outcomes.NO_AGENT, gone.read_text(errors="replace").strip())
    rc_file = folder / f"{node}.rc"
    if not rc_file.exists():
        return failed(node, outcomes.by_id(missing_id), f"no result within {budget_s} s: {missing}")
    rc = int(rc_file.read_text().strip() or -1)
    if rc == 124:
        return failed(node, outcomes.NO_RESULT, f"timed out after {budget_s} s{_said(folder, node)}")
    if rc == 137:
        why = f"killed by SIGKILL (ignored the stop at {budget_s} s, or ran out of memory)"
        return failed(node, outcomes.NO_RESULT, f"{why}{_said(folder, node)}")
    report_file = folder / f"{node}.report.json"
    text = report_file.read_text() if report_file.exists() else (folder / f"{node}.stdout").read_text()
    try:
        report = NodeReport.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        problem = f"{where}: {first['msg']}" if where else first["msg"]
        what = f"node command exited {rc}" if rc else "node command printed no readable report"
        return failed(node, outcomes.NO_RESULT, f"{what}: {problem}{_said(folder, node)}")
    return report.model_copy(update={"node": node})


def failed(node: str, spec: OutcomeSpec, message: str, status: Status = Status.FAIL) -> NodeReport:
    """A report holding one outcome the head node observed, with that outcome's registered title and fix."""
    result = CheckResult(check_id=spec.id, title=spec.title, status=status, message=message, fix=spec.fix)
    return NodeReport(node=node, checks=[result])


def _said(folder: Path, node: str) -> str:
    """The last line the node command wrote to stderr, usually the one that explains it."""
    path = folder / f"{node}.stderr"
    tail = path.read_text(errors="replace")[-TAIL_CHARS:].strip() if path.exists() else ""
    return f" (stderr: {tail.splitlines()[-1]})" if tail else ""


# -- which nodes, and what to do with drained ones ------------------------------------------------------------


@dataclass
class Selection:
    """The nodes to test, split by what Slurm allows."""

    runnable: list[str] = field(default_factory=list)
    retest: list[str] = field(default_factory=list)  # drained by hpclz earlier: re-tested inside a reservation
    skipped: dict[str, NodeReport] = field(default_factory=dict)  # down, or drained by someone else


def select(infos: Iterable[NodeInfo], *, drain: bool) -> Selection:
    chosen = Selection()
    for info in infos:
        if info.unreachable:
            chosen.skipped[info.name] = failed(
                info.name, outcomes.UNREACHABLE, f"Slurm reports it {info.state}{_reason(info)}"
            )
        elif info.drained_by_hpclz and drain:
            chosen.retest.append(info.name)
        elif info.busy:
            # One busy node would hold its whole job of up to 100 nodes in the queue; test it another time.
            note = f"not tested: busy running jobs (Slurm reports it {info.state})"
            chosen.skipped[info.name] = failed(info.name, outcomes.NOT_TESTED, note, Status.NOT_MEASURED)
        elif not info.schedulable:
            note = f"not tested: Slurm reports it {info.state}{_reason(info)}"
            if info.drained_by_hpclz:
                note += "; pass --drain to re-test and resume it"
            chosen.skipped[info.name] = failed(info.name, outcomes.NOT_TESTED, note, Status.NOT_MEASURED)
        else:
            chosen.runnable.append(info.name)
    return chosen


def _reason(info: NodeInfo) -> str:
    return f" ({info.reason})" if info.reason else ""


def drain_reason(report: NodeReport) -> str:
    """`hpclz: <first failing check>: <message> [+N more]`, one line, which NHC-style tools can match."""
    bad = report.failures()
    first = bad[0]
    more = f" [+{len(bad) - 1} more]" if len(bad) > 1 else ""
    return f"{DRAIN_PREFIX} {first.check_id} {first.message or first.title}{more}"


def settle(
    client: SlurmClient,
    reports: dict[str, NodeReport],
    infos: dict[str, NodeInfo],
    resumed_for_retest: Iterable[str] = (),
) -> tuple[list[str], list[str]]:
    """Drain nodes that failed; resume those hpclz drained earlier that now pass. Operators' drains stay.

    `resumed_for_retest` were resumed inside a reservation to run their re-test: they only need draining
    again if they still fail.
    """
    already = set(resumed_for_retest)
    drained, resumed = [], []
    for node, report in reports.items():
        info = infos.get(node)
        if report.failures():
            if info is not None and info.state.startswith("drain") and not info.drained_by_hpclz:
                continue
            if all(c.check_id in NEVER_DRAINED for c in report.failures()):
                continue
            client.drain(node, drain_reason(report))
            drained.append(node)
        elif info is not None and info.drained_by_hpclz:
            if node not in already:
                client.resume(node)
            resumed.append(node)
    return drained, resumed
