"""Run the training proof as one Slurm job chain and judge it.

Steps, each its own sbatch job starting only after the one before it succeeded (--dependency=afterok):
set-up (GPU clusters: the container image and Megatron-LM onto shared storage), data preparation,
preprocessing, then the training runs: one on each chosen node alone (exclusive, all its GPUs), and one across
all of them. A failed step cancels the jobs still waiting on it, so nothing sits in the queue forever with
"DependencyNeverSatisfied".
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hpclz.slurm.client import FINISHED_STATES, SlurmClient
from hpclz.verify.checks import outcomes
from hpclz.verify.collective_job import job_error
from hpclz.verify.model import CheckResult, Status
from hpclz.verify.workload import megatron_log, scripts
from hpclz.verify.workload.expectations import Expectation
from hpclz.verify.workload.judge import Judged, RunLog, judge
from hpclz.verify.workload.scripts import WorkloadPlan

POLL_S = 0.5
SETUP_S = 1800  # importing a ~20 GB image onto shared storage the first time
STEP_S = 600
RUN_S = 900  # one training run of a few hundred iterations, with start-up


@dataclass(frozen=True)
class Chain:
    jobs: dict[str, str]  # step name -> job id, in submission order
    logs: dict[str, Path]


def _submit(
    client: SlurmClient,
    plan: WorkloadPlan,
    name: str,
    script: str,
    nodes: Sequence[str],
    *,
    after: str | None,
    time_s: int,
    partition: str | None,
) -> tuple[str, Path]:
    path = plan.work_dir / f"{name}.sh"
    path.write_text(script)
    log = plan.work_dir / f"{name}.out"
    log.unlink(missing_ok=True)  # a reused work folder must not answer for this run
    job = client.sbatch(
        path,
        nodes=nodes,
        job_name=f"hpclz-proof-{name}",
        time_limit_s=time_s,
        output=log,
        partition=partition,
        exclusive=name.startswith("train"),
        env=plan.env,
        dependency=f"afterok:{after}" if after else None,
    )
    return job, log


def stage_inputs(plan: WorkloadPlan, inputs: Sequence[Path]) -> WorkloadPlan:
    """Copy the documents (or, with none given, hpclz's own Python sources: code, as the seed's CodeParrot data
    set is, and shipped with every install) into the shared data folder, where the nodes read them."""
    plan.data_dir.mkdir(parents=True, exist_ok=True)
    sources = list(inputs) or sorted(Path(__file__).resolve().parents[2].rglob("*.py"))
    staged = plan.data_dir / "documents.jsonl"
    with staged.open("w", encoding="utf-8") as sink:
        for source in sources:
            if source.suffix in (".jsonl", ".json"):
                with source.open(encoding="utf-8") as lines:
                    sink.writelines(line if line.endswith("\n") else line + "\n" for line in lines if line.strip())
            else:
                sink.write(json.dumps({"content": source.read_text(encoding="utf-8", errors="replace")}) + "\n")
    return replace(plan, inputs=(staged,))


def submit(client: SlurmClient, plan: WorkloadPlan, nodes: Sequence[str], partition: str | None, run_s: int) -> Chain:
    plan.work_dir.mkdir(parents=True, exist_ok=True)
    prepare_py = plan.work_dir / "prepare.py"
    shutil.copyfile(Path(__file__).with_name("prepare.py"), prepare_py)
    jobs: dict[str, str] = {}
    logs: dict[str, Path] = {}
    first = [nodes[0]]
    previous: str | None = None
    steps: list[tuple[str, str, int]] = []
    if plan.mode == "megatron":
        steps.append(("setup", scripts.setup_script(plan), SETUP_S))
    steps += [
        ("prepare", scripts.prepare_script(plan, prepare_py), STEP_S),
        ("preprocess", scripts.preprocess_script(plan), STEP_S),
    ]
    for name, text, limit in steps:
        previous, logs[name] = _submit(
            client, plan, name, text, first, after=previous, time_s=limit, partition=partition
        )
        jobs[name] = previous
    runs = [(f"train-{node}", [node]) for node in nodes]
    if len(nodes) > 1:
        runs.append(("train-all", list(nodes)))
    for name, group in runs:
        job, logs[name] = _submit(
            client,
            plan,
            name,
            scripts.train_script(plan, len(group)),
            group,
            after=previous,
            time_s=run_s,
            partition=partition,
        )
        jobs[name] = job
    return Chain(jobs=jobs, logs=logs)


def nothing_to_train() -> CheckResult:
    """The proof's verdict when no node passed the checks before it: not measured, and never a pass."""
    spec = outcomes.WORKLOAD_CHAIN
    why = "not run: no node passed the checks before it, so there is nothing to train on"
    return CheckResult(check_id=spec.id, title=spec.title, status=Status.NOT_MEASURED, message=why, fix=spec.fix)


def budget_s(mode: str, nodes: int, run_s: int = RUN_S) -> int:
    """The whole chain's worst case: the steps one after another, the single-node runs side by side on their own
    nodes but counted one after another (a busy partition may queue them), then the all-node run."""
    return (SETUP_S if mode == "megatron" else 0) + 2 * STEP_S + (nodes + 1) * run_s


def wait(client: SlurmClient, chain: Chain, deadline_s: float) -> dict[str, str]:
    """Every step's final state. A step that did not complete cancels everything still waiting; at the deadline
    whatever is left is cancelled too."""
    end = time.monotonic() + deadline_s
    final: dict[str, str] = {}
    names = {job: name for name, job in chain.jobs.items()}
    while len(final) < len(names):
        states = client.job_states([job for job in names if names[job] not in final])
        for job, state in states.items():
            if state in FINISHED_STATES:
                final[names[job]] = state
        broken = [name for name, state in final.items() if state != "COMPLETED" and not name.startswith("train")]
        waiting = [job for job in names if names[job] not in final]
        if (broken or time.monotonic() > end) and waiting:
            client.cancel(waiting)
            why = "CANCELLED (an earlier step failed)" if broken else "CANCELLED (past the deadline)"
            for job in waiting:
                final[names[job]] = why
        elif waiting:
            time.sleep(POLL_S)
    return {name: final[name] for name in chain.jobs}


def run_logs(plan: WorkloadPlan, chain: Chain, nodes: Sequence[str]) -> list[RunLog]:
    gpus = plan.gpus_per_node if plan.mode == "megatron" else 1
    out = []
    for name, log in chain.logs.items():
        if not name.startswith("train"):
            continue
        group = [name.removeprefix("train-")] if name != "train-all" else list(nodes)
        text = log.read_text(errors="replace") if log.exists() else ""
        iterations = megatron_log.parse(text.splitlines())
        out.append(
            RunLog(
                name=name,
                nodes=group,
                gpus=gpus * len(group),
                iterations=iterations,
                log=str(log),
                why_empty="" if iterations else job_error(log)[:300],
            )
        )
    return out


def run(
    client: SlurmClient,
    plan: WorkloadPlan,
    nodes: Sequence[str],
    expect: Expectation,
    *,
    partition: str | None = None,
    run_s: int = RUN_S,
    inputs: Sequence[Path] = (),
) -> Judged:
    if not nodes:
        raise ValueError("the training proof needs at least one node")
    plan = stage_inputs(plan, inputs)
    chain = submit(client, plan, nodes, partition, run_s)
    steps = wait(client, chain, budget_s(plan.mode, len(nodes), run_s))
    pre_steps = {name: state for name, state in steps.items() if not name.startswith("train")}
    return judge(plan.shape, run_logs(plan, chain, nodes), expect, steps=pre_steps)
