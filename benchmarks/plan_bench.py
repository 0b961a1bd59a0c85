"""How long an offline `hpclz plan` takes on each preset (target: under a second for the largest).

Run from the repository root: `.venv/bin/python benchmarks/plan_bench.py [ROUNDS]`.
Three figures per preset: the whole service call as the CLI runs it (load, validate, render, read
the local state, diff); the diff alone against a state where every resource differs (a tag edit,
so no deployment takes the unchanged-hash shortcut); and the config-level diff.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.plan.support import applied_state, edited

from hpclz.azure.backends import open_backend
from hpclz.config.loader import load_config
from hpclz.plan.config_diff import config_changes
from hpclz.plan.offline import offline_changeset
from hpclz.render.build import build_plan
from hpclz.services.plan import PlanOptions, plan

REPO = Path(__file__).resolve().parent.parent


def _timed(label: str, rounds: int, action: Callable[[], object]) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    median = statistics.median(samples)
    print(f"  {label:<40} median {median:8.2f} ms  max {max(samples):8.2f} ms")
    return median


def bench(preset: Path, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config_file = Path(tmp) / preset.name
        shutil.copy(preset, config_file)
        config = load_config(config_file).config
        backend = open_backend(config, base_dir=Path(tmp))
        backend.read()
        backend.write(applied_state(config))
        retagged = edited(config, lambda d: d["metadata"]["tags"].update(bench="1"))
        state = applied_state(config)
        resources = len(offline_changeset(build_plan(config), None).resources)
        print(f"{preset.stem}: {resources} resources")
        _timed("hpclz plan (service, no changes)", rounds, lambda: plan(PlanOptions(config_file)))
        _timed("render + diff, every resource changed", rounds, lambda: offline_changeset(build_plan(retagged), state))
        _timed("config diff", rounds, lambda: config_changes(state.applied_config, retagged))


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    for preset in sorted((REPO / "configs").glob("*.yaml")):
        bench(preset, rounds)


if __name__ == "__main__":
    main()
