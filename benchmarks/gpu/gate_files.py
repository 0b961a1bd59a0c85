"""Take the health gate's files out of a rendered preset, for benchmarks/gpu/gate_on_gpu.sh on a lent GPU machine.

    python benchmarks/gpu/gate_files.py RENDER_DIR OUT_DIR     # RENDER_DIR: `hpclz render configs/P.yaml -d RENDER_DIR`

The lent machine has no pydantic, so it cannot render: the files travel instead. Writes into OUT_DIR, byte for byte
as the cluster template carries them (the heredocs of the CloudInit scripts in artifacts/cyclecloud/slurm-cluster.txt):
- hpclz-gate-install: the scheduler's installer (hpclz.render.health_gate), which builds the node bundle and writes
  passive.sh, the prolog and the epilog under /sched/<cluster>;
- hpclz-health: each execute node's Slurm HealthCheckProgram (the same on every nodearray: checked here);
- hpclz-gpu-clocks: the GPU clocks boot program of the first nodearray that has one (only its read-only queries run
  on a lent machine: the device tool's rules forbid changing the accelerator's settings).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FILES = {
    "hpclz-gate-install": "/opt/hpclz/bin/hpclz-gate-install",
    "hpclz-health": "/opt/hpclz/bin/hpclz-health",
    "hpclz-gpu-clocks": "/opt/hpclz/bin/hpclz-gpu-clocks",
}


def heredocs(cluster_template: str, path: str) -> set[str]:
    """Every distinct body written to `path` by a `cat > path <<'HPCLZ_EOF'` heredoc in the template's scripts."""
    scripts = re.findall(r"CloudInit = '''(.*?)'''", cluster_template, flags=re.S)
    pattern = rf"cat > {re.escape(path)} <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$"
    return {body for script in scripts for body in re.findall(pattern, script, flags=re.S | re.M)}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: gate_files.py RENDER_DIR OUT_DIR", file=sys.stderr)
        return 2
    template = (Path(argv[0]) / "artifacts/cyclecloud/slurm-cluster.txt").read_text()
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, path in FILES.items():
        bodies = sorted(heredocs(template, path))
        if not bodies:
            print(f"error: the rendered cluster template writes no {path}", file=sys.stderr)
            return 1
        if name != "hpclz-gpu-clocks" and len(bodies) != 1:
            print(f"error: {len(bodies)} different {path} in the rendered cluster template", file=sys.stderr)
            return 1
        (out / name).write_text(bodies[0])
        (out / name).chmod(0o755)
    print(f"wrote {', '.join(FILES)} into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
