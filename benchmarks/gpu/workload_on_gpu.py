"""Run the training proof's Megatron-LM path on one lent GPU machine, without Slurm or pyxis.

    PYTHONPATH=src python3 benchmarks/gpu/workload_on_gpu.py --megatron DIR --out OUT_DIR [--iters 200]

Not run by CI (it needs a GPU). A lent machine has no Slurm, no enroot/pyxis and no network, so this runs the
same three steps the chain's job scripts run (hpclz/verify/workload/scripts.py), each as the script would run
it inside the container, with the model arguments the chain builds (`scripts._model_args`), on the GPUs this
machine has:
  prepare     hpclz/verify/workload/prepare.py over hpclz's own sources (the chain's default data)
  preprocess  Megatron-LM's tools/preprocess_data.py --tokenizer-type NullTokenizer --vocab-size 256 --append-eod
  train       torchrun --standalone --nproc_per_node=<GPUs> pretrain_gpt.py <the chain's arguments>
DIR is a Megatron-LM tree exported at the commit the chain pins (scripts.DEFAULT_MEGATRON_COMMIT); its
`.hpclz-commit` file names the commit and is checked. What differs from the chain, and why:
  - `--transformer-impl local --no-gradient-accumulation-fusion`: the machine's PyTorch has neither
    Transformer Engine nor Apex, which the NGC image the chain pins ships; Megatron's default transformer_impl
    is transformer_engine, and gradient accumulation fusion needs Apex's fused_weight_gradient_mlp_cuda
    (megatron/core/tensor_parallel/layers.py). The local implementation is slower than TE: the MFU measured here
    is a floor for what the chain measures in the NGC image.
  - NCCL/UCX variables for InfiniBand (scripts.NCCL_ENV) are left out: one node, no HCA. CUDA_DEVICE_MAX_CONNECTIONS=1
    is kept (Megatron asks for it).
Writes OUT_DIR/megatron-train.log (Megatron's own log), OUT_DIR/workload-steps.json (each step's exit status and
wall time). The lead parses the log with hpclz.verify.workload.megatron_log and judges it with the chain's judge.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from hpclz.verify.workload import scripts
from hpclz.verify.workload.scripts import WorkloadPlan
from hpclz.verify.workload.shape import PROOF_MODEL

ROOT = Path(__file__).resolve().parents[2]
LOCAL_IMPL = [
    "--transformer-impl=local",
    "--no-gradient-accumulation-fusion",
    "--no-persist-layer-norm",
    "--no-masked-softmax-fusion",
]


def _run(name: str, command: list[str], log: Path, steps: dict[str, object], env: dict[str, str], limit: int) -> bool:
    started = time.monotonic()
    with log.open("a") as sink:
        sink.write(f"== {name}: {' '.join(command)}\n")
        sink.flush()
        try:
            done = subprocess.run(command, stdout=sink, stderr=subprocess.STDOUT, env=env, timeout=limit, check=False)
            code: int | str = done.returncode
        except subprocess.TimeoutExpired:
            code = f"timed out after {limit} s"
    steps[name] = {"exit": code, "wall_s": round(time.monotonic() - started, 2)}
    return code == 0


def _compile_helpers(megatron: Path, log: Path, steps: dict[str, object], env: dict[str, str]) -> bool:
    """Megatron builds its dataset helpers with `make` and `python3-config --extension-suffix`
    (megatron/core/datasets/Makefile); a virtual environment may have no python3-config, so build the module
    under this interpreter's own suffix first (make then finds nothing to do or builds a harmless copy)."""
    folder = megatron / "megatron" / "core" / "datasets"
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    includes = subprocess.run(
        [sys.executable, "-m", "pybind11", "--includes"], capture_output=True, text=True, check=False
    ).stdout.split()
    command = ["g++", "-O3", "-Wall", "-shared", "-std=c++17", "-fPIC", *includes]
    command += [str(folder / "helpers.cpp"), "-o", str(folder / f"helpers_cpp{suffix}")]
    return _run("compile-helpers", command, log, steps, env, 300)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megatron", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/hpclz-proof"))
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--gpus", type=int, default=1)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log, steps = args.out / "megatron-train.log", dict[str, object]()
    commit = (args.megatron / ".hpclz-commit").read_text().strip()
    if commit != scripts.DEFAULT_MEGATRON_COMMIT:
        raise SystemExit(f"{args.megatron} is Megatron-LM {commit}, not the pinned {scripts.DEFAULT_MEGATRON_COMMIT}")
    plan = WorkloadPlan(work_dir=args.work, shape=PROOF_MODEL, train_iters=args.iters, gpus_per_node=args.gpus)
    env = {
        **os.environ,
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(args.megatron), os.environ.get("PYTHONPATH")])),
    }
    inputs = sorted(str(p) for p in (ROOT / "src" / "hpclz").rglob("*.py"))
    ok = _run(
        "prepare",
        [
            sys.executable,
            str(ROOT / "src/hpclz/verify/workload/prepare.py"),
            "--out",
            str(plan.corpus),
            "--min-tokens",
            str(plan.min_tokens),
            *inputs,
        ],
        log,
        steps,
        env,
        300,
    )
    ok = ok and _run(
        "preprocess",
        [
            sys.executable,
            str(args.megatron / "tools" / "preprocess_data.py"),
            "--input",
            str(plan.corpus),
            "--json-keys",
            "text",
            "--output-prefix",
            str(plan.prefix),
            "--tokenizer-type",
            "NullTokenizer",
            "--vocab-size",
            "256",
            "--append-eod",
            "--workers",
            str(os.cpu_count() or 8),
        ],
        log,
        steps,
        env,
        300,
    )
    ok = ok and _compile_helpers(args.megatron, log, steps, env)
    model_args = scripts._model_args(plan, args.gpus)
    ok = ok and _run(
        "train",
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={args.gpus}",
            str(args.megatron / "pretrain_gpt.py"),
            *model_args,
            *LOCAL_IMPL,
        ],
        log,
        steps,
        env,
        420,
    )
    (args.out / "workload-steps.json").write_text(
        json.dumps(
            {"megatron_commit": commit, "model_args": model_args, "extra_args": LOCAL_IMPL, "steps": steps}, indent=2
        )
        + "\n"
    )
    print(json.dumps(steps))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
