"""Judging the proof's runs: loss, a slow node named, weak scaling, the chain's steps."""

from __future__ import annotations

from hpclz.verify.model import CheckResult, Status
from hpclz.verify.workload.expectations import for_gpu
from hpclz.verify.workload.judge import RunLog, judge
from hpclz.verify.workload.megatron_log import Iteration
from hpclz.verify.workload.shape import GPTShape

SHAPE = GPTShape(layers=12, hidden=768, heads=12, seq_length=2048, vocab=256, micro_batch=4, global_batch=4)
H100 = for_gpu("NVIDIA H100 SXM")


def run_log(
    name: str, nodes: list[str], step_ms: float, *, gpus_per_node: int = 8, n: int = 20, loss_to: float = 2.0
) -> RunLog:
    gpus = gpus_per_node * len(nodes)
    its = [
        Iteration(
            i, n, step_ms * (5 if i == 1 else 1), 6.0 - (6.0 - loss_to) * i / n, global_batch=SHAPE.micro_batch * gpus
        )
        for i in range(1, n + 1)
    ]
    return RunLog(name=name, nodes=nodes, gpus=gpus, iterations=its)


def _by_id(checks: list[CheckResult], check_id: str) -> list[CheckResult]:
    return [c for c in checks if c.check_id == check_id]


def test_a_healthy_cluster_passes_with_its_figures() -> None:
    # 4 sequences x 2,048 tokens per GPU in 30 ms: ~273,000 tokens/s/GPU; at equation 3's ~1.0 GFLOP per token
    # that is ~0.28 PFLOP/s per GPU, MFU ~28 % of H100's 989 TFLOP/s, above its 4 % floor.
    logs = [run_log(f"train-node{i}", [f"node{i}"], 30.0) for i in (1, 2, 3)] + [
        run_log("train-all", ["node1", "node2", "node3"], 31.0)
    ]
    judged = judge(SHAPE, logs, H100, steps={"setup": "COMPLETED", "prepare": "COMPLETED", "preprocess": "COMPLETED"})
    report = judged.report
    assert judged.bad_nodes == {}
    assert report.status is Status.PASS, [c.message for c in report.checks if c.status is not Status.PASS]
    single = report.runs[0]
    assert single.step_s == 0.03  # the first, slow iteration is left out of the timing
    assert single.tokens_per_s_per_gpu is not None and abs(single.tokens_per_s_per_gpu - 4 * 2048 / 0.03) < 1e-6
    assert single.mfu is not None and 0.2 < single.mfu < 0.4
    assert report.weak_scaling is not None and abs(report.weak_scaling - 30 / 31) < 1e-9
    assert report.parameters == SHAPE.parameters()


def test_a_slow_node_is_named_with_the_figures_that_convict_it() -> None:
    logs = [
        run_log("train-node1", ["node1"], 30.0),
        run_log("train-node2", ["node2"], 45.0),
        run_log("train-node3", ["node3"], 30.5),
    ]
    judged = judge(SHAPE, logs, H100)
    assert list(judged.bad_nodes) == ["node2"]
    (bad,) = [c for c in judged.report.checks if c.status is Status.FAIL]
    assert bad.check_id == "HPCLZ-VFY-952" and bad.message.startswith("node2:")
    assert "of the peers' median" in bad.message


def test_two_nodes_cannot_say_which_is_slow_but_the_mfu_floor_still_applies() -> None:
    logs = [run_log("train-node1", ["node1"], 30.0), run_log("train-node2", ["node2"], 300.0)]
    judged = judge(SHAPE, logs, H100)
    assert list(judged.bad_nodes) == ["node2"]  # ~2.8 % MFU: below the 4 % floor, whoever its peer is
    (why,) = judged.bad_nodes["node2"]
    assert "MFU" in why.message and "median" not in why.message


def test_an_unknown_gpu_has_no_mfu_but_is_still_compared_with_its_peers() -> None:
    logs = [run_log(f"train-node{i}", [f"node{i}"], ms, gpus_per_node=1) for i, ms in ((1, 30.0), (2, 30.0), (3, 90.0))]
    judged = judge(SHAPE, logs, for_gpu(None))
    assert all(run.mfu is None for run in judged.report.runs)
    assert list(judged.bad_nodes) == ["node3"]


def test_weak_scaling_below_the_floor_fails() -> None:
    logs = [run_log(f"train-node{i}", [f"node{i}"], 30.0) for i in (1, 2)] + [
        run_log("train-all", ["node1", "node2"], 45.0)
    ]
    report = judge(SHAPE, logs, H100).report
    (scaling,) = _by_id(report.checks, "HPCLZ-VFY-953")
    assert scaling.status is Status.FAIL and scaling.measured == round(30 / 45, 4)


def test_a_loss_that_does_not_fall_or_nan_iterations_fail() -> None:
    flat = run_log("train-node1", ["node1"], 30.0, loss_to=6.5)
    nan = run_log("train-node2", ["node2"], 30.0)
    nan.iterations[5] = Iteration(6, 20, 30.0, None, global_batch=32, nan=1)
    report = judge(SHAPE, [flat, nan], H100).report
    losses = _by_id(report.checks, "HPCLZ-VFY-951")
    assert [c.status for c in losses] == [Status.FAIL, Status.FAIL]
    assert "NaN or skipped iterations at [6]" in losses[1].message


def test_a_failed_step_and_an_empty_run_are_failures_not_gaps() -> None:
    empty = RunLog(
        name="train-node1", nodes=["node1"], gpus=8, iterations=[], why_empty="NCCL error: unhandled system error"
    )
    report = judge(
        SHAPE, [empty], H100, steps={"setup": "FAILED", "prepare": "CANCELLED (an earlier step failed)"}
    ).report
    (chain,) = _by_id(report.checks, "HPCLZ-VFY-950")
    assert chain.status is Status.FAIL and "setup FAILED" in chain.message
    assert any("NCCL error" in c.message for c in _by_id(report.checks, "HPCLZ-VFY-951"))
    assert report.status is Status.FAIL


def test_with_no_healthy_node_the_proof_is_not_measured_never_passed() -> None:
    from hpclz.verify.model import WorkloadReport
    from hpclz.verify.workload.chain import nothing_to_train

    report = WorkloadReport(checks=[nothing_to_train()])
    assert report.status is Status.NOT_MEASURED
    assert report.checks[0].check_id == "HPCLZ-VFY-950" and "nothing to train on" in report.checks[0].message
