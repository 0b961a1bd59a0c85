#!/usr/bin/env bash
# Run hpclz's node verification on a real GPU machine and compare it with the captured H200 baseline.
#
#   benchmarks/gpu/verify_on_gpu.sh [OUT_DIR]        (from the repository root; OUT_DIR defaults to $OUT or ./gpu-verify-out)
#
# Not run by CI (it needs a GPU). It writes into OUT_DIR:
#   full-time.txt                  the full active suite's wall time (against aznhc's "up to 5 minutes")
#   health.json / health-time.txt  the fast tier on the live driver, and its wall time (must stay well under 60 s)
#   nhc.txt                        the --nhc line and exit status
#   full.json                      `hpclz verify --local --nccl -o json` (health + perf + intra-node all-reduce), or the
#                                  agent's own JSON when the CLI's dependencies are not installed on the machine
#   compare.json                   each perf figure next to tests/fixtures/gpu/h200/baseline-bench.json (ratio), and
#                                  the targets: GEMM >= 0.97, HBM >= 0.95, host-to-device >= 0.95 of the
#                                  baseline, health tier <= 60 s (`meets` true/false per target)
#   allreduce-<n>.json             torch.distributed NCCL all-reduce over the machine's n GPUs (n >= 2 only)
#   nvidia-smi-q.xml               this machine's reading, to grow the parser fixtures
# The agent is standard-library only, so PYTHONPATH=src is enough for the health tier; perf needs torch with CUDA.
# A lent machine is not an Azure ND VM: the checks of the VM's shape (InfiniBand, NVMe, CPU, memory, PCI topology)
# fail there and exit codes say so; the figures to record are the perf ones in compare.json.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT_DIR="${1:-${OUT:-gpu-verify-out}}"
mkdir -p "$OUT_DIR"
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
SKU="${SKU:-Standard_ND96isr_H200_v5}"
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
# The lent machine may hold fewer GPUs than the SKU: judge the GPUs it has, report the rest as they are.
SETS=(--set "gpu_count=${GPUS:-0}")
echo "python: $PY; GPUs: $GPUS; SKU thresholds: $SKU" | tee "$OUT_DIR/env.txt"
nvidia-smi -q -x > "$OUT_DIR/nvidia-smi-q.xml" 2>&1 || true
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.device_count())' \
  >> "$OUT_DIR/env.txt" 2>&1 || echo "torch: not importable" >> "$OUT_DIR/env.txt"

start=$(date +%s%N)
"$PY" -m hpclz.verify.agent --sku "$SKU" "${SETS[@]}" --json "$OUT_DIR/health.json"
echo "exit $?" >> "$OUT_DIR/env.txt"
end=$(date +%s%N)
echo "health tier wall time: $(( (end - start) / 1000000 )) ms" | tee "$OUT_DIR/health-time.txt"
"$PY" -m hpclz.verify.agent --sku "$SKU" "${SETS[@]}" --nhc > "$OUT_DIR/nhc.txt"; echo "exit $?" >> "$OUT_DIR/nhc.txt"

# The full single-node active suite (health + perf + intra-node all-reduce), timed whole: aznhc's suite takes
# "up to 5 minutes" (Azure/azurehpc-health-checks dockerfile/README.MD @0e0a1ac, line 42).
full_start=$(date +%s%N)
if "$PY" -c 'import typer, pydantic, ruamel.yaml' 2>/dev/null && [ -f configs/ai-training.yaml ]; then
  # The CLI takes overrides from the config only: copy the preset with this machine's GPU count for the SKU.
  "$PY" - "$SKU" "${GPUS:-0}" "$OUT_DIR/config.yaml" <<'PYEOF'
import sys
from ruamel.yaml import YAML
sku, gpus, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
yaml = YAML()
doc = yaml.load(open("configs/ai-training.yaml"))
doc.setdefault("verify", {})["thresholds"] = {sku: {"gpu_count": gpus}}
yaml.dump(doc, open(target, "w"))
PYEOF
  HPCLZ_VERIFY_SKU="$SKU" "$PY" -c "import sys; from hpclz.cli import main; sys.exit(main(sys.argv[1:]))" verify "$OUT_DIR/config.yaml" \
    --local --nccl --junit "$OUT_DIR/verify.xml" --plot "$OUT_DIR/busbw.html" -o json > "$OUT_DIR/full.json" 2> "$OUT_DIR/full.err"
else
  "$PY" -m hpclz.verify.agent --sku "$SKU" "${SETS[@]}" --tier perf --nccl --json "$OUT_DIR/full.json" 2> "$OUT_DIR/full.err"
fi
echo "full tier exit $?" >> "$OUT_DIR/env.txt"
full_end=$(date +%s%N)
echo "full suite wall time: $(( (full_end - full_start) / 1000000 )) ms" | tee "$OUT_DIR/full-time.txt"

if [ "${GPUS:-0}" -ge 2 ]; then
  "$PY" - "$GPUS" "$OUT_DIR" <<'PYEOF'
import sys
from pathlib import Path
from hpclz.verify.nccl import spawn_local
n, out = int(sys.argv[1]), Path(sys.argv[2])
why = spawn_local(n, "nccl", [2**20, 2**24, 2**28, 2**30, 2**32], out / f"allreduce-{n}.json", name=f"intranode x{n}", threshold=None)
print(why or f"wrote allreduce-{n}.json")
PYEOF
fi

"$PY" - "$OUT_DIR" <<'PYEOF'
import json, re, sys
from pathlib import Path
out = Path(sys.argv[1])
base = json.loads(Path("tests/fixtures/gpu/h200/baseline-bench.json").read_text())
# metric -> (baseline key, check, target as a share of the baseline; None: recorded only)
pairs = {
    "gemm_bf16_tflops": ("gemm_bfloat16_tflops", "HPCLZ-VFY-020", 0.97),
    "hbm_copy_tbps": ("hbm_copy_tbps_rw", "HPCLZ-VFY-021", 0.95),
    "h2d_gbps": ("h2d_gbps", "HPCLZ-VFY-022", 0.95),
    "d2h_gbps": ("d2h_gbps", "HPCLZ-VFY-022", None),
}
text = (out / "full.json").read_text() if (out / "full.json").exists() else ""
full = json.loads(text or "{}")
node = (full.get("result", {}).get("nodes") or [full])[0]
checks = {c["check_id"]: c for c in node.get("checks", [])}
rows = {}
for metric, (key, check_id, target) in pairs.items():
    check = checks.get(check_id, {})
    # VFY-022's `measured` is the slowest of both directions: read each direction's own figure from its message.
    found = re.search(rf"{metric} ([\d.]+)", check.get("message") or "")
    measured = float(found.group(1)) if found else check.get("measured")
    ratio = round(measured / base[key], 3) if isinstance(measured, (int, float)) and base.get(key) else None
    rows[metric] = {"measured_min_over_gpus": measured, "baseline": base.get(key), "ratio": ratio, "target": target,
                    "meets": None if target is None or ratio is None else ratio >= target,
                    "status": check.get("status"), "message": check.get("message")}
ms = re.search(r"(\d+) ms", (out / "health-time.txt").read_text()) if (out / "health-time.txt").exists() else None
rows["health_tier_s"] = {"measured": int(ms.group(1)) / 1000 if ms else None, "target": 60,
                         "meets": None if ms is None else int(ms.group(1)) / 1000 <= 60}
fs = re.search(r"(\d+) ms", (out / "full-time.txt").read_text()) if (out / "full-time.txt").exists() else None
rows["full_suite_s"] = {"measured": int(fs.group(1)) / 1000 if fs else None, "aznhc_up_to_s": 300,
                        "meets": None if fs is None else int(fs.group(1)) / 1000 <= 300}
for check_id in ("HPCLZ-VFY-026", "HPCLZ-VFY-030", "HPCLZ-VFY-023"):  # recorded only: peers, all-reduce, DCGM
    check = checks.get(check_id, {})
    rows[check_id] = {"status": check.get("status"), "measured": check.get("measured"), "message": check.get("message")}
(out / "compare.json").write_text(json.dumps(rows, indent=2) + "\n")
print(json.dumps(rows, indent=2))
PYEOF
