"""The two-tier health gate Slurm runs on each node: passive checks as HealthCheckProgram, the active check in the
prolog, and the epilog check. Standard library and Slurm's own `scontrol` only, like the agent it runs.

    python3 -m hpclz.verify.gate passive [--confirm 2] [--state DIR]      # HealthCheckProgram
    python3 -m hpclz.verify.gate prolog --budget 10 --per-gpu 1.25 --prolog-timeout 60  # Prolog
    python3 -m hpclz.verify.gate epilog --budget 20                        # Epilog
    python3 -m hpclz.verify.gate boot --budget 60                          # the Scheduled Events watcher, at boot
    (each also takes --spool DIR, --node NAME, and after `--`, the agent's own arguments)

Why two tiers and a hard budget: slurmd kills a HealthCheckProgram that runs past 60 s (slurm.conf(5),
HealthCheckProgram); a prolog that outlives PrologEpilogTimeout fails the job and drains the node (slurm.conf(5),
PrologEpilogTimeout), which is the "Prolog hung" users report when DCGM runs in the prolog on p4d/p5
(aws/aws-parallelcluster#6777); aznhc's suite takes "up to 5 minutes" (Azure/azurehpc-health-checks
dockerfile/README.MD @0e0a1ac, line 42). So the gate runs the verify agent's health tier (drivers, logs and sysfs,
no load) in its own process group under a watchdog that kills the whole group at the budget: a hung tool costs the
check, never the job. Heavy checks (NCCL, DCGM level 2+, bandwidth) never run here: `hpclz verify --tier perf`
runs them as jobs on idle or drained nodes.

What each tier does with the agent's answer:
- a failed check (a device fault the agent read): drain the node with a reason naming the checks. The passive tier
  drains only after `--confirm` readings in a row fail the same check (a transient reading never drains), except a
  kernel-log Xid (HPCLZ-VFY-006), which is the record of an event and drains at once. The prolog also exits 1, so
  Slurm requeues the job elsewhere ("If the Prolog fails ... the node [is set] to a DRAIN state and the job ...
  requeued", slurm.conf(5), Prolog); the epilog exits 0 (the job is over; a failing epilog would replace hpclz's
  reason with Slurm's).
- no answer (the agent hung past the budget, crashed, or printed no report), or a report whose only doubt is a
  check flagged inconclusive (a tool it runs crashed after printing: hpclz.verify.probes.source.Output.crashed):
  inconclusive. A failed tool is not a failed device, and not a pass either: the node is drained for a re-test with
  a reason that says so, and the job runs (the prolog exits 0).
- otherwise pass.
- the boot tier is asked by the node's Scheduled Events watcher whether a node it drained for a reboot or redeploy
  may come back: it drains at the first failing or inconclusive reading (with its own reason, which replaces the
  watcher's, so the watcher leaves the node drained) and exits 1 unless the node passed.

One owner per drain: the gate never touches a node already drained for a reason that is not hpclz's (CycleCloud's
healthagent drains with "Healthcheck failures. ..." and resumes only such nodes: Azure/cyclecloud-healthagent
healthagent/etc/health.sh.example @3c7e2da), and never resumes anything: returning a node is `hpclz verify`'s and
hpclz.remediate's job (the rendered cluster runs neither; there, Slurm's power saving gives an idle drained node back
after SuspendTime, as cyclecloud-slurm's idle_on_node_suspend clears its drain: docs/node-health.md, "What runs
without a person"). With `--spool DIR` the gate leaves each failing report there as `<node>-<time>.json` for
the remediator to pick up.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpclz.slurm.client import DRAIN_PREFIX, SlurmClient, SlurmError

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
GATE_PREFIX = f"{DRAIN_PREFIX} gate"
HEALTHCHECK_KILL_S = 60.0  # slurm.conf(5), HealthCheckProgram: "killed if it runs more than 60 seconds"
DEFAULT_STATE = "/var/tmp/hpclz-gate"  # survives a reboot (FHS: /var/tmp is kept between boots), unlike /tmp
IMMEDIATE = frozenset({"HPCLZ-VFY-006"})  # kernel-log Xid lines record an event: no second reading needed
KILL_GRACE_S = 0.2  # after SIGKILL, how long to wait for the group to be reaped before giving up on it
DEFAULT_BUDGET_S = {"passive": 30.0, "prolog": 20.0, "epilog": 20.0, "boot": 60.0}
# Each tool the agent runs gets this share of the budget, so one hung tool leaves time for the others' readings.
TOOL_SHARE = 0.4
# Of the budget, what is kept back for the drain after the agent (sinfo, then scontrol update), at most 2 s.
DRAIN_SHARE = 0.3
MAX_DRAIN_RESERVE_S = 2.0
EXIT_MARGIN_S = 0.3  # printing the line and the interpreter's exit
# Of PrologEpilogTimeout, what the prolog's budget leaves to slurmd (forking the script, its own wrapper): the larger
# of 2 s and a tenth. Past the timeout slurmd kills the prolog, drains the node and requeues the job (slurm.conf(5),
# PrologEpilogTimeout), the outcome the gate exists to avoid.
PROLOG_MARGIN_MIN_S = 2.0
PROLOG_MARGIN_SHARE = 0.1


def job_gpus(value: str | None) -> int:
    """How many GPUs the job holds on this node: SLURM_JOB_GPUS, "The GPU IDs of GPUs in the job allocation (if
    any). Available in the Prolog and Epilog" (slurm.conf(5), Prolog and Epilog Scripts, Slurm 22.05), a comma list
    such as "0,1,2,3"; unset for a job without GPUs."""
    return len([i for i in (value or "").split(",") if i.strip()])


def prolog_budget(base_s: float, per_gpu_s: float, gpus: int, prolog_timeout_s: float | None) -> float:
    """The prolog's budget sized to the job: `base_s` plus `per_gpu_s` for each GPU the job holds here, never more
    than PrologEpilogTimeout less its margin. A job that holds eight GPUs loses eight GPUs' work to a node that
    fails under it, so it buys the longer check; a CPU job on a GPU node gets the base. slurmd's Prolog sees only
    its own node's allocation (SLURM_JOB_NODELIST is given to PrologSlurmctld, not to Prolog, in 22.05's
    slurm.conf(5)), so the size that matters here is the node's share."""
    budget = base_s + per_gpu_s * gpus
    if prolog_timeout_s is not None:
        margin = max(PROLOG_MARGIN_MIN_S, prolog_timeout_s * PROLOG_MARGIN_SHARE)
        budget = min(budget, prolog_timeout_s - margin)
    return budget


def _process_started() -> float:
    """When this process started, on the monotonic clock: from /proc/self/stat's starttime (field 22, clock ticks
    after boot; proc(5)) and /proc/uptime, so the interpreter's own start-up counts against the budget too.
    Where /proc is not there, the moment of this import."""
    now = time.monotonic()
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started_after_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return now
    return now - max(0.0, uptime - started_after_boot)


STARTED = _process_started()


@dataclass(frozen=True)
class Bounded:
    rc: int | None  # None: killed at the budget
    output: str
    elapsed_s: float

    @property
    def timed_out(self) -> bool:
        return self.rc is None


def run_bounded(argv: list[str], budget_s: float, env: dict[str, str] | None = None) -> Bounded:
    """Run argv in a new session; at the budget, SIGKILL its whole process group and return without it.
    Output goes to a file, not a pipe, so a grandchild that keeps the pipe open cannot hold the gate."""
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc: int | None = proc.wait(timeout=budget_s)
        except subprocess.TimeoutExpired:
            rc = None
            _kill_group(proc)
        out.seek(0)
        return Bounded(rc, out.read(), time.monotonic() - started)


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    # A process stuck in the kernel (a GPU driver call) dies when the call returns; the gate does not wait for it.
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE_S)


@dataclass(frozen=True)
class Decision:
    outcome: str
    reason: str  # one line: what failed, or why nothing was decided
    failed: tuple[str, ...] = ()  # check ids
    report: dict[str, Any] | None = None


def decide(bounded: Bounded, report_file: Path, budget_s: float) -> Decision:
    if bounded.timed_out:
        return Decision(INCONCLUSIVE, f"health agent did not finish within {budget_s:g} s (killed)")
    report = _report(report_file)
    if report is None:
        said = bounded.output.strip().splitlines()
        return Decision(
            INCONCLUSIVE, f"health agent exited {bounded.rc} with no report: {said[-1] if said else 'no output'}"
        )
    failed = [c for c in report.get("checks", []) if c.get("status") == FAIL and not c.get("suppressed")]
    if failed:
        reason = "; ".join(f"{c['check_id']} {c.get('message', '')}".strip() for c in failed)
        return Decision(FAIL, reason, tuple(c["check_id"] for c in failed), report)
    if not any(c.get("status") == PASS for c in report.get("checks", [])):
        return Decision(INCONCLUSIVE, "health agent measured nothing", report=report)
    unsure = [c for c in report.get("checks", []) if c.get("inconclusive") and not c.get("suppressed")]
    if unsure:  # a tool crashed: the node proved nothing either way on what that tool reads
        reason = "; ".join(f"{c['check_id']} {c.get('message', '')}".strip() for c in unsure)
        return Decision(INCONCLUSIVE, reason, report=report)
    return Decision(PASS, "healthy", report=report)


def _report(report_file: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads(report_file.read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) and isinstance(loaded.get("checks"), list) else None


class Streaks:
    """How many readings in a row each check has failed on this node (the passive tier's memory)."""

    def __init__(self, folder: Path, node: str):
        self.path = folder / f"gate-{node}.json"

    def update(self, failed: tuple[str, ...]) -> dict[str, int]:
        try:
            old: dict[str, int] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            old = {}
        new = {check: old.get(check, 0) + 1 for check in failed}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(new))
        tmp.replace(self.path)
        return new


@dataclass
class Gate:
    tier: str
    node: str
    budget_s: float
    agent: list[str]
    slurm: SlurmClient
    confirm: int = 2
    state: Path | None = None
    spool: Path | None = None

    @property
    def drain_reserve_s(self) -> float:
        return min(MAX_DRAIN_RESERVE_S, self.budget_s * DRAIN_SHARE)

    @property
    def reserve_s(self) -> float:
        """What the agent's share leaves for after it: its kill, the drain, and the exit."""
        return self.drain_reserve_s + KILL_GRACE_S + EXIT_MARGIN_S

    def run(self, started: float | None = None) -> tuple[int, str]:
        """(exit status, the one line to print). The budget counts from `started` (the process's start; default
        now), and the time a drain may take is kept back from the agent's share, so the whole gate ends in it."""
        started = time.monotonic() if started is None else started
        agent_budget = max(0.1, self.budget_s - self.reserve_s - (time.monotonic() - started))
        tool_timeout = max(0.5, agent_budget * TOOL_SHARE)
        with tempfile.TemporaryDirectory(prefix="hpclz-gate-") as scratch:
            report_file = Path(scratch) / "report.json"
            argv = [*self.agent, "--tier", "health", "--node", self.node, "--timeout", f"{tool_timeout:g}"]
            argv += ["--json", str(report_file)]
            decision = decide(run_bounded(argv, agent_budget), report_file, self.budget_s)
        if decision.outcome == PASS:
            if self.state is not None:
                Streaks(self.state, self.node).update(())
            return 0, f"hpclz gate {self.tier}: {self.node} healthy"
        if self.tier == "passive" and not self._confirmed(decision):
            said = "failed" if decision.outcome == FAIL else INCONCLUSIVE
            return 0, f"hpclz gate passive: {self.node} {said} once, not drained yet: {decision.reason}"
        what = "failed" if decision.outcome == FAIL else "inconclusive, re-test"
        drained = self._drain(f"{GATE_PREFIX} {self.tier} {what}: {decision.reason}")
        if decision.outcome == FAIL and self.spool is not None and decision.report is not None:
            self.spool.mkdir(parents=True, exist_ok=True)
            (self.spool / f"{self.node}-{time.time_ns()}.json").write_text(json.dumps(decision.report))
        line = f"hpclz gate {self.tier}: {self.node} {what}: {decision.reason} ({drained})"
        # The boot tier answers whether the node may be resumed: only a pass says yes.
        refuse = self.tier == "boot" or (decision.outcome == FAIL and self.tier == "prolog")
        return (1 if refuse else 0), line

    def _confirmed(self, decision: Decision) -> bool:
        """A failing or inconclusive reading drains only once the same one came `confirm` times in a row."""
        if set(decision.failed) & IMMEDIATE or self.confirm <= 1:
            return True
        if self.state is None:
            return False
        keys = decision.failed if decision.outcome == FAIL else (INCONCLUSIVE,)
        streaks = Streaks(self.state, self.node).update(keys)
        return any(count >= self.confirm for count in streaks.values())

    def _drain(self, reason: str) -> str:
        try:
            found = self.slurm.nodes(nodelist=self.node)
        except SlurmError as exc:
            return f"not drained: {exc}"
        info = found[0] if found else None
        if info is not None and info.base.startswith("drain") and not info.reason.startswith(DRAIN_PREFIX):
            return f"left drained by its owner: {info.reason}"
        try:
            self.slurm.drain(self.node, reason)
        except SlurmError as exc:
            return f"not drained: {exc}"
        return "drained"


def agent_command() -> list[str]:
    """How to start the verify agent: from the single-file bundle this module was loaded from
    (hpclz.verify.bundle: a zip that runs the agent by default), else as the installed module."""
    bundle = Path(__file__).resolve().parents[2]
    if bundle.is_file() and zipfile.is_zipfile(bundle):
        return [sys.executable, str(bundle)]
    return [sys.executable, "-m", "hpclz.verify.agent"]


def build(argv: list[str] | None = None) -> Gate | str:
    """The gate the command line asks for, or the one-line error that refuses it."""
    parser = argparse.ArgumentParser(prog="hpclz-gate", description=__doc__.splitlines()[0])
    parser.add_argument("tier", choices=["passive", "prolog", "epilog", "boot"])
    parser.add_argument("--budget", type=float, help="hard limit in seconds for the whole check (prolog: its base)")
    parser.add_argument(
        "--per-gpu", type=float, default=0.0, help="prolog: seconds added for each GPU the job holds (SLURM_JOB_GPUS)"
    )
    parser.add_argument(
        "--prolog-timeout", type=float, help="the cluster's PrologEpilogTimeout, to keep the budget under it"
    )
    parser.add_argument("--confirm", type=int, default=2, help="passive: failing readings in a row before a drain")
    parser.add_argument(
        "--state", type=Path, default=Path(DEFAULT_STATE), help="passive: folder for the failing-streak memory"
    )
    parser.add_argument("--spool", type=Path, help="folder to leave failing reports in for hpclz.remediate")
    parser.add_argument("--node", default=os.environ.get("SLURMD_NODENAME") or os.uname().nodename.split(".")[0])
    parser.add_argument("agent_args", nargs="*", help="after --: extra arguments for the verify agent")
    # Everything after the first `--` is the agent's, wherever the gate's own options stand.
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.agent_args += argv[split + 1 :]
    budget = args.budget or DEFAULT_BUDGET_S[args.tier]
    limit = HEALTHCHECK_KILL_S if args.tier == "passive" else args.prolog_timeout
    if limit is not None and budget >= limit:
        return f"error: --budget {budget:g} s must be below {limit:g} s for the {args.tier} tier"
    if args.tier == "prolog":
        budget = prolog_budget(budget, args.per_gpu, job_gpus(os.environ.get("SLURM_JOB_GPUS")), limit)
    return Gate(
        tier=args.tier,
        node=args.node,
        budget_s=budget,
        agent=[*agent_command(), *args.agent_args],
        slurm=SlurmClient(timeout_s=min(MAX_DRAIN_RESERVE_S, budget * DRAIN_SHARE) / 2),
        confirm=args.confirm,
        state=args.state,
        spool=args.spool,
    )


def main(argv: list[str] | None = None) -> int:
    gate = build(argv)
    if isinstance(gate, str):
        print(gate, file=sys.stderr)
        return 2
    try:
        status, line = gate.run(STARTED)
    except Exception as exc:  # a bug in the gate is no verdict on the node: never fail (and drain for) a job on it
        print(f"hpclz gate {gate.tier}: {gate.node} not checked: {type(exc).__name__}: {exc} (a bug in hpclz)")
        return 0
    print(line)
    return status


if __name__ == "__main__":
    sys.exit(main())
