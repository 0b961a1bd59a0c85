"""Wall and CPU time of offline hpclz commands as fresh processes, against `python -c "import typer"` as the floor.

Run: .venv/bin/python benchmarks/cli_startup.py [--runs N] [--src DIR]... [--az PATH] [--as-is] [--instructions]

Cases: `hpclz --help`, `validate`, `plan --offline` and `render --no-gates` on the energy preset.

Each case runs N times, the cases interleaved round-robin so that load from other work on a shared machine falls
on all of them alike. `cold` runs get an empty cache folder each (HPCLZ_CACHE_DIR: no compiled templates, no
gate verdicts); `warm` runs share one filled by an unmeasured run first. Reported per case: the median and range
of wall time, the median CPU time (user + system of the process, which load from other processes disturbs less
than wall time), and the median wall time as a ratio to the floor's (and to `az --help`'s with --az, or where
`az` is on PATH). --src DIR runs the hpclz under DIR/src instead of the installed one (e.g. an older commit from
`git archive`), with this interpreter and its libraries; given with `--src .` and `--src OLD`, the cases of both
are interleaved, for before/after figures under the same load.

--instructions runs each case once more under valgrind's cachegrind (`--cache-sim=no`) and reports the
instructions it executed (cachegrind's "I refs"): the same count on an idle or a loaded machine, so a before/after
comparison on a shared machine need not wait for a quiet moment (valgrind runs a command about 50x slower).

Python bytecode: an installed hpclz has its modules compiled (pip compiles a wheel's modules at install), but
an editable checkout under PYTHONDONTWRITEBYTECODE=1 (set on the development machine) compiles every hpclz
module from source on every run. By default the runs keep bytecode in a temporary PYTHONPYCACHEPREFIX, filled
by the unmeasured first run, as an installed hpclz has it; --as-is leaves the environment as it is.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENERGY = REPO / "configs" / "energy.yaml"


@dataclass
class Case:
    name: str
    argv: list[str]
    env: dict[str, str]
    cache: str = "none"  # none | cold | warm
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    instructions: int | None = None


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(case: Case, warm_dir: Path) -> None:
    cold_dir = Path(tempfile.mkdtemp(prefix="hpclz-bench-cold-"))
    env = {**case.env, "HPCLZ_CACHE_DIR": str(warm_dir if case.cache == "warm" else cold_dir)}
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run(case.argv, env=env, capture_output=True, check=True)
    case.walls.append(time.perf_counter() - start)
    case.cpus.append(_children_cpu() - cpu)
    shutil.rmtree(cold_dir, ignore_errors=True)


def count_instructions(case: Case, warm_dir: Path) -> None:
    """Instructions the case executes (valgrind cachegrind's summary line `I refs: 1,234`), with the warm cache."""
    env = {**case.env, "HPCLZ_CACHE_DIR": str(warm_dir)}
    grind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = subprocess.run([*grind, *case.argv], env=env, capture_output=True, text=True, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    case.instructions = int(found.group(1).replace(",", "")) if found else None


def cases(out_dir: Path, env: dict[str, str], label: str) -> list[Case]:
    hpclz = [sys.executable, "-m", "hpclz"]
    commands = {
        "validate": ["validate", str(ENERGY)],
        # --offline: with no price cache younger than a week (every cold run), plan would read the public Retail
        # Prices API first (hpclz.cost.retail.current_prices): a network round trip, not start-up time.
        "plan --offline": ["plan", str(ENERGY), "--offline"],
        "render --no-gates": ["render", str(ENERGY), "--no-gates", "--out", str(out_dir)],
    }
    found = [Case(f"{label}--help", [*hpclz, "--help"], env)]
    for name, args in commands.items():
        found.append(Case(f"{label}{name} cold", [*hpclz, *args], env, "cold"))
        found.append(Case(f"{label}{name} warm", [*hpclz, *args], env, "warm"))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--src", type=Path, action="append", help="run the hpclz in DIR/src (repeatable)")
    parser.add_argument("--az", default=shutil.which("az"), help="az executable, for `az --help` as yardstick")
    parser.add_argument("--as-is", action="store_true", help="leave PYTHONDONTWRITEBYTECODE as the environment has it")
    parser.add_argument("--instructions", action="store_true", help="also count instructions under valgrind")
    args = parser.parse_args()
    base = dict(os.environ)
    base.pop("HPCLZ_TEMPLATE_CACHE", None)
    with tempfile.TemporaryDirectory(prefix="hpclz-bench-") as tmp:
        warm_dir = Path(tmp) / "cache"
        if not args.as_is:
            base.pop("PYTHONDONTWRITEBYTECODE", None)
            base["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pyc")
        todo = [Case("floor: import typer", [sys.executable, "-c", "import typer"], base)]
        for i, src in enumerate(args.src or [None]):
            env = {**base, "PYTHONPATH": str(src.resolve() / "src")} if src else base
            label = f"{src}: " if src else ""
            todo += cases(Path(tmp) / f"rendered-{i}", env, label)
        if args.az:
            todo.append(Case("az --help", [args.az, "--help"], base))
        for case in todo:  # fills the warm caches (and the bytecode) of every case
            warm = {**case.env, "HPCLZ_CACHE_DIR": str(warm_dir / str(id(case.env)))}
            subprocess.run(case.argv, env=warm, capture_output=True, check=True)
        for _ in range(args.runs):
            for case in todo:
                run_once(case, warm_dir / str(id(case.env)))
        if args.instructions and shutil.which("valgrind"):
            for case in todo:
                if case.cache != "cold":  # a cold run's count differs from the warm one only by compiling templates
                    count_instructions(case, warm_dir / str(id(case.env)))
    report(todo, args)


def report(todo: list[Case], args: argparse.Namespace) -> None:
    floor = statistics.median(todo[0].walls)
    yardstick = statistics.median(todo[-1].walls) if args.az else None
    pyc = "as the environment has it" if args.as_is else "bytecode cached"
    print(f"{args.runs} runs each, load average at the end {os.getloadavg()[0]:.1f}, {pyc}")
    print(f"{'case':34s} {'wall med s':>10s} {'(min-max)':>13s} {'cpu med s':>9s} {'x floor':>7s}", end="")
    print(f" {'x az':>5s}" if yardstick else "", end="")
    print(f" {'Minstr':>7s}" if args.instructions else "")
    for case in todo:
        wall = statistics.median(case.walls)
        spread = f"({min(case.walls):.2f}-{max(case.walls):.2f})"
        line = f"{case.name:34s} {wall:10.3f} {spread:>13s} {statistics.median(case.cpus):9.3f} {wall / floor:7.2f}"
        line += f" {wall / yardstick:5.2f}" if yardstick else ""
        if args.instructions:
            line += f" {case.instructions / 1e6:7.0f}" if case.instructions else f" {'-':>7s}"
        print(line)


if __name__ == "__main__":
    main()
