#!/usr/bin/env bash
# hpclz's health gate as a node runs it, on a real GPU: the scheduler's rendered installer writes the gate into a
# scratch /sched, then the node's HealthCheckProgram (passive tier), the prolog, the epilog and the boot tier run as
# slurmd and the Scheduled Events watcher start them, against the live driver. Healthy first (each tier timed
# against its budget, hpclz.render.health_gate), then a planted fault (the node expecting one GPU more than the
# driver lists, as when a GPU falls off the bus) that must drain the node and fail the prolog and the boot tier.
#
#   python benchmarks/gpu/gate_files.py RENDER_DIR FILES_DIR      # here, after `hpclz render configs/<p>.yaml -d RENDER_DIR`
#   benchmarks/gpu/gate_on_gpu.sh FILES_DIR OUT_DIR [ROUNDS]      # on the lent machine (or here, with
#                                                                 # HPCLZ_VERIFY_FIXTURES set, as a dry run)
# Not run by CI on a GPU. Slurm is not on a lent machine: `sinfo` and `scontrol` are stand-ins on PATH that answer
# for one idle node and write every call to OUT_DIR/slurm-calls.txt, so the drains the gate asks for are on record.
# The GPU clocks program is not run: the device tool forbids changing the accelerator's settings; only its read-only
# queries run, and the pair it would set is looked up in the driver's supported clocks (clocks.txt).
# Writes: runs.tsv (case, tier, exit, ms, the gate's line), slurm-calls.txt, install.txt, clocks.txt, env.txt and
# supported-clocks-<gpu>.txt (`nvidia-smi -i <gpu> -q -d SUPPORTED_CLOCKS`).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
FILES="$(cd "${1:?FILES_DIR}" && pwd)"; OUT_DIR="${2:?OUT_DIR}"; ROUNDS="${3:-5}"
mkdir -p "$OUT_DIR"; OUT_DIR="$(cd "$OUT_DIR" && pwd)"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
{ nvidia-smi -L 2>&1; "$PY" --version; uname -r; echo "fixtures: ${HPCLZ_VERIFY_FIXTURES:-none (live driver)}"; } > "$OUT_DIR/env.txt"

# Slurm stand-ins: one idle node, every call on record (hpclz.slurm.client runs `sinfo -h -N -o %N|%T|%P|%E -n NODE`
# before a drain and `scontrol update NodeName=... State=DRAIN Reason=...` for it).
mkdir -p "$WORK/bin"
cat > "$WORK/bin/sinfo" <<EOF
#!/bin/bash
echo "sinfo \$*" >> "$OUT_DIR/slurm-calls.txt"
node=\${SLURMD_NODENAME:-lent-gpu}
echo "\$node|idle|gpu|none"
EOF
cat > "$WORK/bin/scontrol" <<EOF
#!/bin/bash
echo "scontrol \$*" >> "$OUT_DIR/slurm-calls.txt"
EOF
chmod 755 "$WORK/bin/sinfo" "$WORK/bin/scontrol"
export PATH="$WORK/bin:$PATH"
: > "$OUT_DIR/slurm-calls.txt"

# The scheduler's installer, as its timer runs it once cyclecloud-slurm has made /sched/<cluster>/prolog.d.
SCHED="$WORK/sched/cluster"; mkdir -p "$SCHED/prolog.d"
HPCLZ_SCHED="$SCHED" HPCLZ_PYTHON="$PY" HPCLZ_STAMP="$WORK/stamp" PYTHONPATH="$PWD/src" \
  bash "$FILES/hpclz-gate-install" > "$OUT_DIR/install.txt" 2>&1
echo "exit $?" >> "$OUT_DIR/install.txt"
BUNDLE="$SCHED/hpclz/hpclz-node.pyz"
GATE=$(basename "$(ls "$SCHED"/prolog.d/*)")

printf 'case\ttier\texit\tms\tline\n' > "$OUT_DIR/runs.tsv"
run() {  # case tier command...: one timed run, as slurmd would start it
  local case=$1 tier=$2; shift 2
  local start end rc line
  start=$(date +%s%N)
  line=$("$@" 2>&1); rc=$?
  end=$(date +%s%N)
  printf '%s\t%s\t%s\t%s\t%s\n' "$case" "$tier" "$rc" "$(( (end - start) / 1000000 ))" "${line//$'\n'/ | }" >> "$OUT_DIR/runs.tsv"
}

# Healthy: the node as it is. The passive tier through the HealthCheckProgram on the node's own disk; the prolog
# for a job holding GPU 0; the boot tier as the Scheduled Events watcher asks it after a reboot.
STATE_FILE=/var/tmp/hpclz-gate/gate-lent-gpu.json; [ -e "$STATE_FILE" ] && KEEP_STATE=1 || KEEP_STATE=0
export SLURMD_NODENAME=lent-gpu
for _ in $(seq "$ROUNDS"); do
  run healthy passive env HPCLZ_SCHED="$SCHED" bash "$FILES/hpclz-health"
  run healthy prolog env SLURM_JOB_GPUS=0 bash "$SCHED/prolog.d/$GATE"
  run healthy epilog env SLURM_JOB_GPUS=0 bash "$SCHED/epilog.d/$GATE"
  run healthy boot "$PY" "$BUNDLE" gate boot --budget 60
done
[ "$KEEP_STATE" = 1 ] || rm -f "$STATE_FILE"

# Planted fault: the node expects one GPU more than the driver lists. The installed scripts pass no agent arguments,
# so the bundle runs with the installed scripts' budgets and the override after `--`.
export SLURMD_NODENAME=lent-gpu-fault
want=$(( $(nvidia-smi -L 2>/dev/null | grep -c '^GPU') + 1 ))
[ -n "${HPCLZ_VERIFY_FIXTURES:-}" ] && want=$(( $(grep -c '<gpu id=' "$HPCLZ_VERIFY_FIXTURES/nvidia-smi-q.xml") + 1 ))
planted=(-- --set "gpu_count=$want")
passive_budget=$(sed -n 's/.*gate passive --budget \([0-9.]*\).*/\1/p' "$SCHED/hpclz/passive.sh")
read -r prolog_args < <(sed -n 's/.*gate prolog \(.*\)$/\1/p' "$SCHED/prolog.d/$GATE")
epilog_budget=$(sed -n 's/.*gate epilog --budget \([0-9.]*\).*/\1/p' "$SCHED/epilog.d/$GATE")
echo "== planted fault: gpu_count=$want" >> "$OUT_DIR/slurm-calls.txt"
run fault passive "$PY" "$BUNDLE" gate passive --budget "$passive_budget" --state "$WORK/state" "${planted[@]}"
run fault passive "$PY" "$BUNDLE" gate passive --budget "$passive_budget" --state "$WORK/state" "${planted[@]}"
# shellcheck disable=SC2086  # the installed prolog's own arguments, word-split as its exec line does
run fault prolog env SLURM_JOB_GPUS=0 "$PY" "$BUNDLE" gate prolog $prolog_args "${planted[@]}"
run fault epilog "$PY" "$BUNDLE" gate epilog --budget "$epilog_budget" "${planted[@]}"
run fault boot "$PY" "$BUNDLE" gate boot --budget 60 "${planted[@]}"

# GPU clocks, read-only: the queries hpclz-gpu-clocks makes, and whether the pair it would set is one the driver
# lists as supported (nvidia-smi -q -d SUPPORTED_CLOCKS); nothing is set.
{
  grep -n 'nvidia-smi' "$FILES/hpclz-gpu-clocks"
  command -v nvidia-smi > /dev/null || echo "no nvidia-smi on this machine: no clocks read"
  for gpu in $(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null); do
    raw=$(nvidia-smi -i "$gpu" --query-gpu=clocks.max.memory,clocks.max.sm --format=csv,noheader,nounits 2>&1)
    read -r mem sm < <(tr -d ',' <<< "$raw")
    echo "GPU $gpu: query printed '$raw'; the program would run: nvidia-smi -i $gpu --applications-clocks=$mem,$sm"
    nvidia-smi -i "$gpu" -q -d SUPPORTED_CLOCKS > "$WORK/supported.txt" 2>&1
    cp "$WORK/supported.txt" "$OUT_DIR/supported-clocks-$gpu.txt"
    if awk -v m="$mem" -v s="$sm" '/Memory/ {cur=($3==m)} /Graphics/ && cur && $3==s {ok=1} END {exit !ok}' "$WORK/supported.txt"; then
      echo "GPU $gpu: $mem MHz memory with $sm MHz graphics is a supported application clock pair"
    else
      echo "GPU $gpu: $mem,$sm is NOT in the supported clocks"; head -20 "$WORK/supported.txt"
    fi
    nvidia-smi -i "$gpu" -q -d CLOCK 2>&1 | sed -n '/Applications Clocks/,/Max Clocks/p'
  done
} > "$OUT_DIR/clocks.txt" 2>&1
cat "$OUT_DIR/runs.tsv"
