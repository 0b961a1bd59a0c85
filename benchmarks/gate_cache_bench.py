"""A cold gated `hpclz render` (new process) of the largest preset: first with an empty gate cache, then warm.

Run from the repository root: `.venv/bin/python benchmarks/gate_cache_bench.py [ROUNDS]`.
Each run is a new `hpclz render PRESET --out DIR` process with all three gates (checkov from
$HPCLZ_CHECKOV, the repository's .tools/checkov, or PATH), timed from start to exit. The gate cache lives in
a temporary folder (HPCLZ_CACHE_DIR): the first run fills it, the next ROUNDS find it warm, each followed by
the same render with --no-gates (the floor: imports, rendering, writing). Target: warm <= 1.5 s. The largest preset is the one whose plan has the most resources.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from hpclz.arm.checkov_gate import find_checkov  # noqa: E402
from hpclz.config.loader import load_config  # noqa: E402
from hpclz.render.build import build_plan  # noqa: E402


def largest_preset() -> Path:
    def size(path: Path) -> int:
        return sum(len(d.resources()) for d in build_plan(load_config(path).config).deployments)

    return max(sorted((REPO / "configs").glob("*.yaml")), key=size)


def timed_render(preset: Path, work: Path, env: dict[str, str], *flags: str) -> tuple[float, dict[str, object]]:
    hpclz = Path(sys.executable).parent / "hpclz"
    start = time.perf_counter()
    done = subprocess.run(
        [str(hpclz), "render", str(preset), "--out", str(work / "out"), "-o", "json", *flags],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - start
    result = json.loads(done.stdout)["result"] if done.stdout else {}
    if done.returncode != 0:
        raise SystemExit(f"render failed ({done.returncode}): {done.stderr or done.stdout}")
    return elapsed, result


def main(rounds: int) -> None:
    checkov = find_checkov()
    if checkov is None:
        raise SystemExit("checkov is needed for this benchmark (scripts/install-test-deps)")
    preset = largest_preset()
    with tempfile.TemporaryDirectory(prefix="hpclz-gate-bench-") as folder:
        env = {**os.environ, "HPCLZ_CHECKOV": checkov, "HPCLZ_CACHE_DIR": str(Path(folder) / "cache")}
        first, result = timed_render(preset, Path(folder), env)
        assert result.get("gates_cached") == [], result
        warm, floor = [], []
        for _ in range(rounds):  # interleaved, so both see the same load
            seconds, result = timed_render(preset, Path(folder), env)
            assert result.get("gates_cached") == ["checkov"], result
            warm.append(seconds)
            floor.append(timed_render(preset, Path(folder), env, "--no-gates")[0])
    print(f"preset {preset.stem}: gates {result['gates']}")
    print(f"first run (empty cache): {first:.2f} s")
    print(f"warm cache, median of {rounds}: {statistics.median(warm):.2f} s (min {min(warm):.2f}, max {max(warm):.2f})")
    print(f"--no-gates, median of {rounds}: {statistics.median(floor):.2f} s (the same render without any gate)")
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
