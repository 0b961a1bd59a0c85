#!/usr/bin/env bash
# One lent GPU machine, one call: capture the node's real readings as parser fixtures, build nccl-tests from a
# pinned source against the machine's NCCL, then run benchmarks/gpu/verify_on_gpu.sh with that all_reduce_perf
# on PATH (so the agent's intra-node all-reduce runs the same binary Azure's HPC images ship).
#
#   benchmarks/gpu/capture_on_gpu.sh OUT_DIR [NCCL_TESTS_SRC]
#
# Not run by CI. NCCL_TESTS_SRC is an exported NVIDIA/nccl-tests tree (the machine reaches no network). Every
# step is bounded and allowed to fail: what a step could not do is written next to its output, never hidden.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT_DIR="${1:?OUT_DIR}"; SRC="${2:-}"
CAP="$OUT_DIR/capture"; mkdir -p "$CAP"
PY="${PYTHON:-python3}"
step() { local name=$1; shift; echo "== $name: $*"; timeout "${STEP_S:-120}" "$@" > "$CAP/$name" 2>&1; echo "exit $?" >> "$CAP/$name.rc"; }

step nvidia-smi.txt nvidia-smi
step nvidia-smi-q.xml nvidia-smi -q -x
step nvidia-smi-q.txt nvidia-smi -q
step nvidia-smi-q-performance.txt nvidia-smi -q -d PERFORMANCE
step nvidia-smi-q-ecc-remap.txt nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT
step query-gpu.csv nvidia-smi --format=csv --query-gpu=index,name,serial,uuid,pci.bus_id,driver_version,vbios_version,memory.total,memory.used,memory.reserved,memory.free,ecc.mode.current,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.volatile.total,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,clocks.max.sm,clocks.current.sm,clocks.max.memory,clocks_event_reasons.active,temperature.gpu,power.draw,power.limit,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,persistence_mode
step query-remapped-rows.csv nvidia-smi --query-remapped-rows=gpu_bus_id,gpu_uuid,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure --format=csv
step topo-m.txt nvidia-smi topo -m
step nvlink-s.txt nvidia-smi nvlink -s
step dcgmi-discovery.txt dcgmi discovery -l
step tools.txt bash -c 'for t in nvcc dcgmi nv-hostengine ibstat ibv_devinfo all_reduce_perf nvbandwidth mpirun srun; do printf "%s: %s\n" $t "$(command -v $t || echo absent)"; done; nvcc --version; uname -r'
step nvml-readings.txt "$PY" - <<'PYEOF'
import pynvml as n
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
def show(name, call):
    try:
        print(name, call())
    except n.NVMLError as err:
        print(name, "ERR", err)
show("nvmlSystemGetDriverVersion", n.nvmlSystemGetDriverVersion)
show("nvmlDeviceGetName", lambda: n.nvmlDeviceGetName(h))
show("nvmlDeviceGetMemoryInfo_v2", lambda: n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2))
show("nvmlDeviceGetRemappedRows", lambda: n.nvmlDeviceGetRemappedRows(h))
show("nvmlDeviceGetRetiredPagesPendingStatus", lambda: n.nvmlDeviceGetRetiredPagesPendingStatus(h))
show("nvmlDeviceGetEccMode", lambda: n.nvmlDeviceGetEccMode(h))
show("nvmlDeviceGetCurrentClocksEventReasons", lambda: n.nvmlDeviceGetCurrentClocksEventReasons(h))
show("nvmlDeviceGetMaxClockInfo_SM", lambda: n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM))
show("nvmlDeviceGetCurrPcieLinkGeneration", lambda: n.nvmlDeviceGetCurrPcieLinkGeneration(h))
show("nvmlDeviceGetCurrPcieLinkWidth", lambda: n.nvmlDeviceGetCurrPcieLinkWidth(h))
for link in range(18):
    show(f"nvlink {link} state", lambda: n.nvmlDeviceGetNvLinkState(h, link))
PYEOF

BIN=""
if [ -n "$SRC" ] && [ -d "$SRC/src" ]; then
  # The pip wheel nvidia-nccl-cu13 ships include/ and lib/libnccl.so.2 but no unversioned libnccl.so to link.
  NCCL_PKG=$("$PY" -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
  CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  mkdir -p /tmp/nccl/lib; ln -sf "$NCCL_PKG/include" /tmp/nccl/include
  ln -sf "$NCCL_PKG"/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
  echo "NCCL_PKG=$NCCL_PKG CUDA_HOME=$CUDA_HOME" > "$CAP/nccl-tests-build.txt"
  STEP_S=300 step nccl-tests-build.log make -C "$SRC/src" -j16 MPI=0 CUDA_HOME="$CUDA_HOME" NCCL_HOME=/tmp/nccl \
    NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 BUILDDIR=/tmp/nccl-tests-build
  if [ -x /tmp/nccl-tests-build/all_reduce_perf ]; then
    BIN=/tmp/nccl-tests-build
    export LD_LIBRARY_PATH="$NCCL_PKG/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    step all_reduce_perf.txt "$BIN/all_reduce_perf" -b 8 -e 1G -f 4 -g 1 -c 1
    NCCL_DEBUG=VERSION step all_reduce_perf-version.txt "$BIN/all_reduce_perf" -b 1M -e 1M -g 1 -c 1 -n 5
  fi
fi

[ -n "$BIN" ] && export PATH="$BIN:$PATH"
SKU="${SKU:-Standard_ND96isr_H100_v5}" STEP_S=300 step verify-run.log bash benchmarks/gpu/verify_on_gpu.sh "$OUT_DIR/verify"
# Serial numbers and UUIDs stay in the archive: they are replaced by placeholders where the files are committed.
tar -C "$OUT_DIR" -czf "$OUT_DIR/capture.tgz" capture verify && rm -rf "$CAP"
cp "$OUT_DIR/verify/compare.json" "$OUT_DIR/compare.json" 2>/dev/null; rm -rf "$OUT_DIR/verify"
ls -la "$OUT_DIR"
