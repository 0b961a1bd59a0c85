"""Wall time of `hpclz --help` and `hpclz --version` as fresh processes (target: well under 0.25 s).

Run: .venv/bin/python benchmarks/cli_startup.py [runs]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

HPCLZ = Path(sys.executable).parent / "hpclz"


def measure(args: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([str(HPCLZ), *args], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    for args in (["--help"], ["--version"]):
        times = measure(args, runs)
        print(
            f"hpclz {' '.join(args):10s} median {statistics.median(times) * 1000:6.1f} ms  max {max(times) * 1000:6.1f} ms"
        )


if __name__ == "__main__":
    main()
