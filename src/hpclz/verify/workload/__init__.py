"""The training proof: a short Megatron-LM GPT pretraining run through Slurm and pyxis, measured and judged.

Health checks and NCCL miss what only a real training step shows: a slow data path, a broken container stack,
a wrong NCCL environment inside the container, ranks placed badly. The seed's design recommendations for AI
workloads on Azure IaaS give the path after NCCL: prepare a small dataset, preprocess it with Megatron-LM's
tools/preprocess_data.py, and train with Megatron-LM in a container through pyxis and enroot. This package runs
those steps as one Slurm job chain (hpclz.verify.workload.chain), reads Megatron's own log lines
(hpclz.verify.workload.megatron_log) and judges tokens per second per GPU, step time, model FLOPs utilisation,
weak scaling and the loss (hpclz.verify.workload.judge).

The job scripts follow Microsoft's Megatron-LM example for CycleCloud Workspace for Slurm
(Azure/ai-infrastructure-on-azure examples/megatron-lm/GPT3-175B/slurm, 00-setup_environment.sh@1a26167 and
04-gpt175B.sh@00068b8): the NGC PyTorch image imported once with `enroot import`, Megatron-LM checked out at a
pinned commit on shared storage, `srun --container-image=... torchrun pretrain_gpt.py`, and the NCCL and UCX
settings that example exports. Where no GPU is present (this repository's tests), a CPU stand-in
(hpclz.verify.workload.standin) trains a small GPT with torch's gloo backend through the same chain and prints
the same log lines, so the harness is exercised end to end.
"""
