"""The proof's job scripts: what pyxis and torchrun are given, and every script clean under shellcheck."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hpclz.verify.workload import scripts
from hpclz.verify.workload.scripts import WorkloadPlan
from hpclz.verify.workload.shape import PROOF_MODEL
from tests.conftest import require

GPU_PLAN = WorkloadPlan(
    work_dir=Path("/shared/hpclz proof"),  # a space: every path must reach the job quoted
    shape=PROOF_MODEL,
    topo_file=scripts.TOPO_FILES["Standard_ND96isr_H100_v5"],
    inputs=(Path("/shared/hpclz proof/data/documents.jsonl"),),
)
STANDIN_PLAN = WorkloadPlan(work_dir=Path("/tmp/w"), shape=PROOF_MODEL, mode="standin", python="/venv/bin/python")


def _all(plan: WorkloadPlan) -> dict[str, str]:
    out = {
        "prepare": scripts.prepare_script(plan, plan.work_dir / "prepare.py"),
        "preprocess": scripts.preprocess_script(plan),
        "train-1": scripts.train_script(plan, 1),
        "train-4": scripts.train_script(plan, 4),
    }
    if plan.mode == "megatron":
        out["setup"] = scripts.setup_script(plan)
    return out


@pytest.mark.parametrize("plan", [GPU_PLAN, STANDIN_PLAN], ids=["megatron", "standin"])
def test_every_script_passes_shellcheck(plan: WorkloadPlan, tmp_path: Path) -> None:
    require(shutil.which("shellcheck") is not None, "shellcheck")
    for name, text in _all(plan).items():
        path = tmp_path / f"{name}.sh"
        path.write_text(text)
        done = subprocess.run(["shellcheck", "-s", "bash", str(path)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{name}:\n{done.stdout}"
        assert text.startswith("#!/bin/bash\n") and "set -euo pipefail" in text


def test_training_runs_megatron_in_the_pinned_container_with_azures_nccl_settings() -> None:
    text = scripts.train_script(GPU_PLAN, 4)
    # pyxis: the imported image, the shared folder and the topology file mounted, the environment passed in.
    assert "--container-image='/shared/hpclz proof/pytorch.sqsh'" in text
    assert (
        "--container-mounts='/shared/hpclz proof:/shared/hpclz proof,/opt/microsoft/ndv5-topo.xml:/opt/microsoft/ndv5-topo.xml'"
        in text
    )
    assert "--container-env=" in text and "NCCL_TOPO_FILE" in text.split("--container-env=")[1]
    # Azure's example (04-gpt175B.sh@00068b8) exports exactly these before srun.
    for key, value in scripts.NCCL_ENV.items():
        assert f"export {key}={value}\n" in text
    assert "export NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\n" in text
    assert 'torchrun --nproc_per_node=8 --nnodes="$SLURM_NNODES"' in text
    assert "'/shared/hpclz proof/Megatron-LM/pretrain_gpt.py'" in text
    # Weak scaling: 4 sequences per GPU on every run; 4 nodes x 8 GPUs -> 128.
    assert "--global-batch-size=128" in text and "--micro-batch-size=4" in text
    assert "--tokenizer-type=NullTokenizer" in text and "--vocab-size=256" in text and "--log-throughput" in text


def test_setup_pins_the_image_by_digest_and_checks_the_checkout() -> None:
    text = scripts.setup_script(GPU_PLAN)
    assert "docker://nvcr.io#nvidia/pytorch@sha256:" in text
    assert "checkout --quiet --detach f2619067782edcbca7b7a3342650bf2fdc9a8942" in text
    assert (
        "test \"$(git -C '/shared/hpclz proof/Megatron-LM' rev-parse HEAD)\" = f2619067782edcbca7b7a3342650bf2fdc9a8942"
        in text
    )
    assert "pip install" not in text  # nothing fetched by name at run time


def test_preprocessing_uses_megatrons_own_tool_without_gpus() -> None:
    text = scripts.preprocess_script(GPU_PLAN)
    assert "NVIDIA_VISIBLE_DEVICES=void" in text  # 03-preprocess_dataset.sh@3f4a0e6
    assert (
        "Megatron-LM/tools/preprocess_data.py' --input '/shared/hpclz proof/data/corpus_ids.jsonl' --json-keys text"
        in text
    )
    assert "--tokenizer-type NullTokenizer --vocab-size 256 --append-eod" in text
