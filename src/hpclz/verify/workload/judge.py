"""Judge the training proof's runs: loss, throughput per node, weak scaling. Returns what the report prints.

A node that trains slowly is named the way a node that fails a health check is: its single-node run fails
HPCLZ-VFY-952 with the figures that convict it, and it is listed among the bad nodes (drained with --drain).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from hpclz.verify.checks import outcomes
from hpclz.verify.model import CheckResult, Status, WorkloadReport, WorkloadRun
from hpclz.verify.workload.expectations import Expectation
from hpclz.verify.workload.megatron_log import Iteration
from hpclz.verify.workload.shape import GPTShape, mfu, model_tflops_per_gpu, tokens_per_s_per_gpu

MIN_TIMED = 3  # iterations needed after warm-up for a figure worth judging


@dataclass(frozen=True)
class RunLog:
    """What one training job left: its nodes, GPUs and the iterations read from its log."""

    name: str
    nodes: list[str]
    gpus: int
    iterations: list[Iteration]
    log: str = ""
    why_empty: str = ""  # the job's own last words when it logged no iteration


@dataclass
class Judged:
    report: WorkloadReport
    bad_nodes: dict[str, list[CheckResult]] = field(default_factory=dict)  # node -> the checks that convict it


def warmup(count: int) -> int:
    """Iterations to leave out of the timing: the first includes CUDA/NCCL initialisation and compilation (in
    Megatron's own logs it is several times slower than the rest), so at least one, else a tenth of the run."""
    return max(1, count // 10)


def summarise(run: RunLog, shape: GPTShape, expect: Expectation) -> WorkloadRun:
    its = run.iterations
    timed = its[warmup(len(its)) :]
    out = WorkloadRun(name=run.name, nodes=run.nodes, gpus=run.gpus, iterations=len(its), log=run.log)
    losses = [it.lm_loss for it in its if it.lm_loss is not None]
    if losses:
        quarter = max(1, len(losses) // 4)
        out.loss_first = statistics.median(losses[:quarter])
        out.loss_last = statistics.median(losses[-quarter:])
    if len(timed) < MIN_TIMED or run.gpus < 1:
        return out
    # Weak scaling keeps the batch per GPU: a run's global batch is what Megatron logged, else micro x GPUs.
    shape = replace(shape, global_batch=timed[-1].global_batch or shape.micro_batch * run.gpus)
    step_s = statistics.median(it.elapsed_ms for it in timed) / 1000.0
    out.step_s = step_s
    out.tokens_per_s_per_gpu = tokens_per_s_per_gpu(shape, step_s, run.gpus)
    out.tflops_per_gpu = model_tflops_per_gpu(shape, step_s, run.gpus)
    if expect.peak_bf16_tflops:
        out.mfu = mfu(out.tflops_per_gpu, expect.peak_bf16_tflops)
    return out


def _check(spec: outcomes.OutcomeSpec, status: Status, message: str, **figures: float | str | None) -> CheckResult:
    return CheckResult(check_id=spec.id, title=spec.title, status=status, message=message, fix=spec.fix, **figures)


def loss_check(run: WorkloadRun, log: RunLog) -> CheckResult:
    bad = [it.iteration for it in log.iterations if it.nan or it.skipped]
    if bad:
        return _check(
            outcomes.WORKLOAD_LOSS,
            Status.FAIL,
            f"{run.name}: NaN or skipped iterations at {bad[:5]}",
            measured=len(bad),
        )
    if run.loss_first is None or run.loss_last is None or run.iterations < 2 * MIN_TIMED:
        return _check(outcomes.WORKLOAD_LOSS, Status.NOT_MEASURED, f"{run.name}: too few iterations with a loss")
    verdict = Status.PASS if run.loss_last < run.loss_first else Status.FAIL
    return _check(
        outcomes.WORKLOAD_LOSS,
        verdict,
        f"{run.name}: lm loss {run.loss_first:.4g} -> {run.loss_last:.4g} (median of the first and last quarter)",
        measured=round(run.loss_last, 4),
        threshold=round(run.loss_first, 4),
    )


def throughput_checks(
    singles: Sequence[WorkloadRun], expect: Expectation
) -> tuple[list[CheckResult], dict[str, list[CheckResult]]]:
    """Each single-node run against the SKU's MFU floor and against its peers' median."""
    rates = [r.tokens_per_s_per_gpu for r in singles if r.tokens_per_s_per_gpu is not None]
    median = statistics.median(rates) if len(rates) >= 3 else None  # two runs cannot say which one is slow
    checks: list[CheckResult] = []
    bad: dict[str, list[CheckResult]] = {}
    for run in singles:
        node = run.nodes[0]
        if run.tokens_per_s_per_gpu is None:
            failed = _check(
                outcomes.WORKLOAD_THROUGHPUT, Status.FAIL, f"{node}: no timed iterations ({run.iterations} logged)"
            )
            checks.append(failed)
            bad.setdefault(node, []).append(failed)
            continue
        faults = []
        if expect.min_mfu is not None and run.mfu is not None and run.mfu < expect.min_mfu:
            faults.append(f"MFU {run.mfu:.1%} < {expect.min_mfu:.0%} for {expect.gpu_model}")
        if median and run.tokens_per_s_per_gpu < expect.relative_slow * median:
            faults.append(
                f"{run.tokens_per_s_per_gpu:.4g} tokens/s/GPU < {expect.relative_slow:.0%} of the peers' median "
                f"{median:.4g}"
            )
        figures = f"{run.tokens_per_s_per_gpu:.4g} tokens/s/GPU, step {run.step_s:.3g} s" + (
            f", MFU {run.mfu:.1%}" if run.mfu is not None else ""
        )
        if faults:
            failed = _check(
                outcomes.WORKLOAD_THROUGHPUT, Status.FAIL, f"{node}: {'; '.join(faults)}", measured=run.mfu, unit="MFU"
            )
            checks.append(failed)
            bad.setdefault(node, []).append(failed)
        else:
            checks.append(
                _check(outcomes.WORKLOAD_THROUGHPUT, Status.PASS, f"{node}: {figures}", measured=run.mfu, unit="MFU")
            )
    return checks, bad


def scaling_check(
    singles: Sequence[WorkloadRun], multi: WorkloadRun, expect: Expectation
) -> tuple[CheckResult, float | None]:
    base = [r.tokens_per_s_per_gpu for r in singles if r.tokens_per_s_per_gpu is not None]
    if not base or multi.tokens_per_s_per_gpu is None:
        why = (
            f"{multi.name}: no timed iterations"
            if multi.tokens_per_s_per_gpu is None
            else "no single-node run to compare"
        )
        status = Status.FAIL if multi.tokens_per_s_per_gpu is None else Status.NOT_MEASURED
        return _check(outcomes.WORKLOAD_SCALING, status, why), None
    efficiency = multi.tokens_per_s_per_gpu / statistics.median(base)
    status = Status.PASS if efficiency >= expect.min_weak_scaling else Status.FAIL
    message = (
        f"{len(multi.nodes)} nodes: {multi.tokens_per_s_per_gpu:.4g} tokens/s/GPU = {efficiency:.1%} of the single-node "
        f"median {statistics.median(base):.4g}"
    )
    return (
        _check(
            outcomes.WORKLOAD_SCALING, status, message, measured=round(efficiency, 4), threshold=expect.min_weak_scaling
        ),
        efficiency,
    )


def judge(shape: GPTShape, logs: Sequence[RunLog], expect: Expectation, steps: dict[str, str] | None = None) -> Judged:
    steps = steps or {}
    report = WorkloadReport(
        model={
            "layers": shape.layers,
            "hidden": shape.hidden,
            "heads": shape.heads,
            "seq_length": shape.seq_length,
            "vocab": shape.vocab,
            "micro_batch_per_gpu": shape.micro_batch,
        },
        parameters=shape.parameters(),
        steps=dict(steps),
    )
    failed_steps = {name: state for name, state in steps.items() if state != "COMPLETED"}
    if failed_steps:
        what = ", ".join(f"{name} {state}" for name, state in failed_steps.items())
        report.checks.append(_check(outcomes.WORKLOAD_CHAIN, Status.FAIL, f"chain stopped: {what}"))
    elif steps:
        report.checks.append(_check(outcomes.WORKLOAD_CHAIN, Status.PASS, f"{len(steps)} steps completed"))
    runs = [(summarise(log, shape, expect), log) for log in logs]
    report.runs = [run for run, _ in runs]
    for run, log in runs:
        if not log.iterations:
            why = f"{run.name}: logged no iteration" + (f" ({log.why_empty})" if log.why_empty else "")
            report.checks.append(_check(outcomes.WORKLOAD_LOSS, Status.FAIL, why))
        else:
            report.checks.append(loss_check(run, log))
    singles = [run for run, _ in runs if len(run.nodes) == 1]
    checks, bad = throughput_checks(singles, expect)
    report.checks += checks
    for multi in (run for run, _ in runs if len(run.nodes) > 1):
        check, efficiency = scaling_check(singles, multi, expect)
        report.checks.append(check)
        report.weak_scaling = efficiency
    return Judged(report=report, bad_nodes=bad)
