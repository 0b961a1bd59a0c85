"""How --workload travels: to the scheduler's verify, into its time limit, and what is refused before any job."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hpclz.config.loader import load_config
from hpclz.verify.session import VerifyOptions, remote_arguments, remote_time_limit
from hpclz.verify.workload.chain import SETUP_S, STEP_S, budget_s
from tests.conftest import REPO, CliResult

CONFIG = REPO / "configs" / "ai-training.yaml"


def test_the_scheduler_runs_the_same_proof() -> None:
    opts = VerifyOptions(config=CONFIG, workload=True, workload_iters=50, workload_image="nvcr.io#nvidia/pytorch:x")
    args = remote_arguments(opts)
    assert "--workload" in args
    assert args[args.index("--workload-engine") + 1] == "megatron"
    assert args[args.index("--workload-iters") + 1] == "50"
    assert args[args.index("--workload-image") + 1] == "nvcr.io#nvidia/pytorch:x"
    assert "--workload" not in remote_arguments(VerifyOptions(config=CONFIG))


def test_the_remote_time_limit_includes_each_partitions_chain() -> None:
    config = load_config(CONFIG).config  # h100: 64 nodes, h200: 32
    plain = remote_time_limit(config, VerifyOptions(config=CONFIG))
    proof = remote_time_limit(config, VerifyOptions(config=CONFIG, workload=True))
    assert proof == min(plain + budget_s("megatron", 64) + budget_s("megatron", 32), 86400)
    assert budget_s("megatron", 1, 900) == SETUP_S + 2 * STEP_S + 2 * 900
    assert budget_s("standin", 3, 100) == 2 * STEP_S + 4 * 100


def test_documents_on_this_machine_are_refused_for_the_scheduler(
    run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"text": "hello"}\n')
    result = run_cli("verify", str(CONFIG), "--via", "run-command", "--workload", "--workload-data", str(docs))
    assert result.exit_code == 64
    assert result.stderr.startswith(
        "error: --workload-data names files on this machine, which the scheduler cannot read"
    )


def test_megatron_on_a_partition_without_gpus_is_refused_before_any_job(run_cli: Callable[..., CliResult]) -> None:
    result = run_cli("verify", str(REPO / "configs" / "energy.yaml"), "-p", "hbv4", "--via", "slurm", "--workload")
    assert result.exit_code == 64
    assert result.stderr.startswith(
        "error: --workload: partition hbv4 (Standard_HB176rs_v4) has no GPUs for Megatron-LM"
    )
