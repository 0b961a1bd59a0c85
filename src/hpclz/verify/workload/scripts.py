"""The training proof's Slurm job scripts: on a GPU cluster through pyxis and Megatron-LM, or the CPU stand-in.

The GPU scripts follow Microsoft's Megatron-LM example for CycleCloud Workspace for Slurm
(Azure/ai-infrastructure-on-azure, examples/megatron-lm/GPT3-175B/slurm):
- 00-setup_environment.sh@1a26167: `enroot import --output <stage>/<image>.sqsh docker://nvcr.io#nvidia/pytorch:...`
  and a Megatron-LM checkout at a pinned commit on shared storage. hpclz pins the image by digest and the
  checkout by its full commit id, and checks the checkout before it is used.
- 04-gpt175B.sh@00068b8: the NCCL/UCX environment (NCCL_ENV below), NCCL_TOPO_FILE from /opt/microsoft,
  CUDA_DEVICE_MAX_CONNECTIONS=1, and `srun --container-mounts=... --container-env=... --container-image=<sqsh>
  torchrun --nproc_per_node $SLURM_GPUS_PER_NODE --nnodes $SLURM_NNODES --rdzv_backend c10d --rdzv_endpoint
  $(hostname):29500 pretrain_gpt.py ...`.
- 03-preprocess_dataset.sh@3f4a0e6: preprocessing needs no GPU (NVIDIA_VISIBLE_DEVICES=void for enroot).
pyxis's options (--container-image, --container-mounts, --container-env, --container-workdir) are documented in
NVIDIA/pyxis's README.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hpclz.verify.workload.shape import GPTShape

# 04-gpt175B.sh@00068b8 lines 31-42 (Azure/ai-infrastructure-on-azure), exported before srun.
NCCL_ENV: dict[str, str] = {
    "OMPI_MCA_coll_hcoll_enable": "0",
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "NCCL_SOCKET_IFNAME": "eth0",
    "UCX_TLS": "rc",
    "UCX_NET_DEVICES": "mlx5_ib0:1",
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_IGNORE_CPU_AFFINITY": "1",
    "NCCL_P2P_NET_CHUNKSIZE": str(512 * 1024),
    "NCCL_PXN_DISABLE": "1",
    "NCCL_MIN_NCHANNELS": "32",
    "CUDA_DEVICE_MAX_CONNECTIONS": "1",
}
# The NCCL topology file Azure's HPC images install per size (hpclz/verify/topology/README.md: azhpc-images
# topology/, and aznhc's per-size mapping).
TOPO_FILES = {
    "Standard_ND96isr_H100_v5": "/opt/microsoft/ndv5-topo.xml",
    "Standard_ND96isr_H200_v5": "/opt/microsoft/ndv5-topo.xml",
    "Standard_ND96asr_v4": "/opt/microsoft/ndv4-topo.xml",
    "Standard_ND96amsr_A100_v4": "/opt/microsoft/ndv4-topo.xml",
}
# NGC PyTorch 26.05, amd64 child of the multi-platform manifest, by digest; the tag alone could move. The digest is
# as a public build file records it (not checked against NGC from here); enroot refuses to import an image whose
# digest does not match, so a wrong pin fails the set-up step loudly, never silently. Override with
# verify.workload.image in the config.
DEFAULT_IMAGE = "nvcr.io#nvidia/pytorch@sha256:ca73b4795f0d3ae27e9cd81b1b1f1b7fc6c0a129f7d51a359d2326e95af48a3d"
# A commit on NVIDIA/Megatron-LM's main branch (2026-03-13, "find optimal number of workers (#3699)") whose
# tools/preprocess_data.py and pretrain_gpt.py ran with hpclz's arguments on a lent H100 (benchmarks/README.md,
# "The training proof"). The earlier pin, 00736f4c, was a commit on that pull request's branch whose
# preprocess_data.py ends main() with an unconditional find_optimal_num_workers(args.performance_dir): with no
# --find-optimal-num-workers it lists the working folder for timing files, finds none and raises IndexError
# after writing the data, so the preprocess step exited 1 every time (found by running it here). The squash
# merge above runs it only under --find-optimal-num-workers (tools/preprocess_data.py lines 469-471).
DEFAULT_MEGATRON_COMMIT = "f2619067782edcbca7b7a3342650bf2fdc9a8942"
MEGATRON_REPO = "https://github.com/NVIDIA/Megatron-LM.git"
RDZV_PORT = 29500  # 04-gpt175B.sh: --rdzv_endpoint "$(hostname)":29500

Mode = Literal["megatron", "standin"]


@dataclass(frozen=True)
class WorkloadPlan:
    work_dir: Path  # shared by every node (NFS, Lustre): scripts, data, image, logs
    shape: GPTShape
    mode: Mode = "megatron"
    train_iters: int = 200
    gpus_per_node: int = 8
    python: str = "python3"  # the stand-in's interpreter (with hpclz and torch)
    image: str = DEFAULT_IMAGE
    megatron_commit: str = DEFAULT_MEGATRON_COMMIT
    topo_file: str | None = None
    inputs: tuple[Path, ...] = ()  # documents to train on (copied into work_dir/data by the head node)
    master_addr: str | None = None  # the stand-in's rendezvous host; None: the job's first node
    env: dict[str, str] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.work_dir / "data"

    @property
    def corpus(self) -> Path:
        return self.data_dir / "corpus_ids.jsonl"

    @property
    def prefix(self) -> Path:
        return self.data_dir / "proof"

    @property
    def sqsh(self) -> Path:
        return self.work_dir / "pytorch.sqsh"

    @property
    def megatron_dir(self) -> Path:
        return self.work_dir / "Megatron-LM"

    @property
    def min_tokens(self) -> int:
        """Enough tokens that no run sees the same sample twice: every iteration of the largest run."""
        return self.train_iters * self.shape.global_batch * (self.shape.seq_length + 1)


def _header(what: str) -> str:
    return f"#!/bin/bash\n# Generated by hpclz verify --workload: {what}.\nset -euo pipefail\n"


def _q(value: str | Path) -> str:
    return shlex.quote(str(value))


def setup_script(plan: WorkloadPlan) -> str:
    """Import the image once and check out Megatron-LM at the pinned commit, both onto the shared folder."""
    mega, commit = _q(plan.megatron_dir), _q(plan.megatron_commit)
    return (
        _header("container image and Megatron-LM onto shared storage")
        + f"""if [ ! -s {_q(plan.sqsh)} ]; then
  enroot import --output {_q(str(plan.sqsh) + ".partial")} {_q("docker://" + plan.image)}
  mv {_q(str(plan.sqsh) + ".partial")} {_q(plan.sqsh)}
fi
if [ ! -d {mega}/.git ]; then
  git clone --quiet {_q(MEGATRON_REPO)} {mega}
fi
git -C {mega} fetch --quiet origin {commit} || true
git -C {mega} checkout --quiet --detach {commit}
test "$(git -C {mega} rev-parse HEAD)" = {commit}
"""
    )


def prepare_script(plan: WorkloadPlan, prepare_py: Path) -> str:
    inputs = " ".join(_q(p) for p in plan.inputs)
    args = f"{inputs} --out {_q(plan.corpus)} --min-tokens {plan.min_tokens}"
    if plan.mode == "standin":
        return _header("data preparation") + f"{_q(plan.python)} -m hpclz.verify.workload.prepare {args}\n"
    # The container's Python runs the standard-library script hpclz copied next to the data (prepare.py).
    return (
        _header("data preparation")
        + "export NVIDIA_VISIBLE_DEVICES=void MELLANOX_VISIBLE_DEVICES=void\n"
        + f"srun --ntasks=1 {_container(plan)} python3 {_q(prepare_py)} {args}\n"
    )


def preprocess_script(plan: WorkloadPlan) -> str:
    if plan.mode == "standin":
        cmd = f"{_q(plan.python)} -m hpclz.verify.workload.standin preprocess --input {_q(plan.corpus)} --output-prefix {_q(plan.prefix)}"
        return _header("preprocessing") + cmd + "\n"
    tool = plan.megatron_dir / "tools" / "preprocess_data.py"
    return (
        _header("preprocessing with Megatron-LM's tools/preprocess_data.py")
        + "export NVIDIA_VISIBLE_DEVICES=void MELLANOX_VISIBLE_DEVICES=void\n"
        + f"srun --ntasks=1 {_container(plan)} python3 {_q(tool)} --input {_q(plan.corpus)} --json-keys text "
        + f"--output-prefix {_q(plan.prefix)} --tokenizer-type NullTokenizer --vocab-size 256 --append-eod "
        + '--workers "${SLURM_CPUS_ON_NODE:-8}"\n'
    )


def _container(plan: WorkloadPlan) -> str:
    mounts = [f"{plan.work_dir}:{plan.work_dir}"]
    if plan.topo_file:
        mounts.append(f"{plan.topo_file}:{plan.topo_file}")
    return (
        f"--container-image={_q(plan.sqsh)} --container-mounts={_q(','.join(mounts))} "
        f"--container-workdir={_q(plan.work_dir)}"
    )


def _model_args(plan: WorkloadPlan, gpus: int) -> list[str]:
    s = plan.shape
    global_batch = s.micro_batch * gpus  # weak scaling: the per-GPU batch stays the same at every size
    return [
        f"--num-layers={s.layers}",
        f"--hidden-size={s.hidden}",
        f"--num-attention-heads={s.heads}",
        f"--seq-length={s.seq_length}",
        f"--max-position-embeddings={s.seq_length}",
        f"--micro-batch-size={s.micro_batch}",
        f"--global-batch-size={global_batch}",
        f"--train-iters={plan.train_iters}",
        "--lr=3e-4",
        "--min-lr=3e-5",
        "--lr-decay-style=cosine",
        "--lr-warmup-iters=10",
        "--weight-decay=0.1",
        "--clip-grad=1.0",
        "--bf16",
        "--tokenizer-type=NullTokenizer",
        "--vocab-size=256",
        f"--data-path={plan.prefix}_text_document",
        "--split=100,0,0",
        "--log-interval=1",
        "--log-throughput",
        "--eval-iters=0",
        # Megatron sizes its evaluation as (train_iters // eval_interval + 1) * eval_iters
        # (megatron/training/training.py get_train_valid_test_num_samples), and eval_interval has no default: without
        # it the run dies with a TypeError before the first step (seen on a lent H100, benchmarks/README.md).
        f"--eval-interval={plan.train_iters}",
        f"--data-cache-path={plan.work_dir / 'datacache'}",
    ]


def train_script(plan: WorkloadPlan, nodes: int) -> str:
    """One training run over the job's nodes: all GPUs of each node, data parallel."""
    if plan.mode == "standin":
        s = plan.shape
        args = [
            "-m",
            "hpclz.verify.workload.standin",
            "train",
            f"--data-prefix={plan.prefix}",
            f"--num-layers={s.layers}",
            f"--hidden-size={s.hidden}",
            f"--num-attention-heads={s.heads}",
            f"--seq-length={s.seq_length}",
            f"--micro-batch-size={s.micro_batch}",
            f"--train-iters={plan.train_iters}",
        ]
        py = _q(plan.python)
        addr = _q(plan.master_addr) if plan.master_addr else '"$(hostname)"'
        return (
            _header(f"CPU stand-in training on {nodes} node(s)")
            + f"MASTER_ADDR={addr}\n"
            + f'MASTER_PORT="$({py} -c \'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])\')"\n'
            + "export MASTER_ADDR MASTER_PORT\n"
            + f'srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --kill-on-bad-exit=1 {py} {" ".join(_q(a) for a in args)}\n'
        )
    env = {**NCCL_ENV, **({"NCCL_TOPO_FILE": plan.topo_file} if plan.topo_file else {}), **plan.env}
    exports = "".join(f"export {key}={_q(value)}\n" for key, value in env.items())
    torchrun = [
        "torchrun",
        f"--nproc_per_node={plan.gpus_per_node}",
        '--nnodes="$SLURM_NNODES"',
        '--rdzv_id="$SLURM_JOB_ID"',
        "--rdzv_backend=c10d",
        f'--rdzv_endpoint="$(hostname)":{RDZV_PORT}',
        _q(plan.megatron_dir / "pretrain_gpt.py"),
        *(_q(a) for a in _model_args(plan, plan.gpus_per_node * nodes)),
    ]
    return (
        _header(f"Megatron-LM GPT pretraining on {nodes} node(s)")
        + exports
        + f"srun --ntasks-per-node=1 --kill-on-bad-exit=1 {_container(plan)} "
        + f"--container-env={','.join(env)} \\\n  {' '.join(torchrun)}\n"
    )
