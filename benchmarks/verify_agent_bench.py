"""How long the node agent's fast (health) tier takes: it must fit Slurm's 60 s HealthCheckProgram limit.

Run from the repository root: `.venv/bin/python benchmarks/verify_agent_bench.py [ROUNDS]`.
Figures, each as a fresh `python3 -m hpclz.verify.agent` process (interpreter start-up included, as NHC
or Slurm would pay it): the health tier on the 8-GPU H200 fixtures (--nhc), the single-file bundle on
the system python3, and the health tier live on this machine (its real /proc, dmesg and missing tools).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hpclz.verify.bundle import build

REPO = Path(__file__).resolve().parent.parent
GOOD = REPO / "tests" / "verify" / "fixtures" / "h200-good"


def _timed(label: str, rounds: int, cmd: list[str]) -> None:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False, timeout=120)
        samples.append(time.perf_counter() - start)
    print(f"  {label:<52} median {statistics.median(samples):6.3f} s  max {max(samples):6.3f} s")


def main(rounds: int) -> None:
    agent = [sys.executable, "-m", "hpclz.verify.agent"]
    print(f"node agent, health tier ({rounds} rounds)")
    _timed("fixtures h200-good (8 GPUs), --nhc", rounds, [*agent, "--fixtures", str(GOOD), "--nhc"])
    _timed("live, this machine, --sku ND96isr_H200_v5", rounds, [*agent, "--sku", "Standard_ND96isr_H200_v5"])
    with tempfile.TemporaryDirectory() as tmp:
        bundle = build(Path(tmp) / "agent.pyz")
        _timed(
            "bundle on /usr/bin/python3, fixtures, --nhc",
            rounds,
            ["/usr/bin/python3", str(bundle), "--fixtures", str(GOOD), "--nhc"],
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
