#!/usr/bin/env bash
# One lent GPU machine, one call, everything that needs a GPU, in the order of what it is worth:
#   1. the training proof's Megatron-LM path on this machine's GPUs (benchmarks/gpu/workload_on_gpu.py), while
#      nccl-tests builds in the background on the CPUs;
#   2. benchmarks/gpu/capture_on_gpu.sh: the node's readings as fixtures, then the verify suite timed whole.
#
#   OUT=/path benchmarks/gpu/all_on_gpu.sh MEGATRON_DIR NCCL_TESTS_SRC
#
# Not run by CI. The machine reaches no network: MEGATRON_DIR is a Megatron-LM tree exported at the pinned commit
# (with a .hpclz-commit file naming it) and NCCL_TESTS_SRC an exported NVIDIA/nccl-tests tree, both carried.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
MEGATRON="${1:?MEGATRON_DIR}"; NCCL_SRC="${2:?NCCL_TESTS_SRC}"; OUT_DIR="${OUT:?OUT}"
export PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
nvidia-smi -L; "$PY" -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'

# The same build capture_on_gpu.sh runs (make finds it done there): the wheel's NCCL has no unversioned .so.
NCCL_PKG=$("$PY" -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
mkdir -p /tmp/nccl/lib; ln -sf "$NCCL_PKG/include" /tmp/nccl/include; ln -sf "$NCCL_PKG"/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
( nice make -C "$NCCL_SRC/src" -j12 MPI=0 CUDA_HOME="$CUDA_HOME" NCCL_HOME=/tmp/nccl \
    NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 BUILDDIR=/tmp/nccl-tests-build > /tmp/nccl-build-bg.log 2>&1 ) &
build=$!

start=$(date +%s)
PYTHONPATH="$PWD/src" timeout 330 "$PY" benchmarks/gpu/workload_on_gpu.py --megatron "$MEGATRON" --out "$OUT_DIR/workload"
echo "workload exit $? after $(( $(date +%s) - start )) s"
wait "$build"; echo "nccl-tests background build exit $?"
STEP_S=200 bash benchmarks/gpu/capture_on_gpu.sh "$OUT_DIR" "$NCCL_SRC"
