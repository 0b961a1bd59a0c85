"""Megatron-LM's iteration lines, read from real logs (tests/fixtures/megatron/README.md)."""

from __future__ import annotations

from hpclz.verify.workload.megatron_log import Iteration, format_line, parse, parse_line
from tests.conftest import REPO

LOGS = REPO / "tests" / "fixtures" / "megatron"


def test_h100_log_with_timestamps_and_throughput() -> None:
    its = parse((LOGS / "h100-mixtral-issue756.log").read_text().splitlines())
    assert [it.iteration for it in its] == [15, 16, 17, 43, 44, 45]
    first = its[0]
    assert first.train_iters == 100
    assert first.elapsed_ms == 5926.4
    assert first.tflops_per_gpu == 220.4
    assert first.global_batch == 128
    assert first.lm_loss == 1.957101  # not load_balancing_loss, which also ends in "loss:"
    assert (first.skipped, first.nan) == (0, 0)


def test_older_log_without_throughput() -> None:
    its = parse((LOGS / "a100-epfllm-issue11.log").read_text().splitlines())
    assert [it.iteration for it in its] == [122, 123, 124, 125]
    assert its[0].tflops_per_gpu is None
    assert its[0].global_batch == 1024
    assert its[-1].elapsed_ms == 89075.2


def test_other_lines_and_cut_lines_are_skipped() -> None:
    assert parse_line("node1:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_ib0:1/IB") is None
    assert parse_line(" iteration        3/      10 | consumed samples: 12 |") is None  # no timing: not a step
    cut = " iteration        3/      10 | elapsed time per iteration (ms): 12.5 | lm loss: 4.1E+"
    assert parse_line(cut) is None


def test_a_restarted_run_keeps_the_later_iteration() -> None:
    lines = [
        " iteration        1/       2 | elapsed time per iteration (ms): 900.0 | lm loss: 5.0E+00 |",
        " iteration        1/       2 | elapsed time per iteration (ms): 100.0 | lm loss: 4.0E+00 |",
    ]
    (only,) = parse(lines)
    assert only.elapsed_ms == 100.0


def test_the_stand_in_prints_what_the_parser_reads() -> None:
    it = Iteration(7, 20, 123.4, 3.25, global_batch=8, tflops_per_gpu=1.5, skipped=0, nan=1)
    assert parse_line(format_line(it)) == it
