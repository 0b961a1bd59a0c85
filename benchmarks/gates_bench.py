"""How long the three template gates take on each preset's rendered plan.

Run from the repository root: `.venv/bin/python benchmarks/gates_bench.py [ROUNDS]`.
Per preset, the median of ROUNDS warm runs: the schema gate (and per resource), the lint gate. Then the
cold schema load (registry of every schema file) and one checkov scan over all presets' templates
together, as tests/arm/test_presets.py runs it (checkov's start-up dominates, so it runs once).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hpclz.arm import checkov_gate, gate_cache, schema_gate
from hpclz.config.loader import load_config
from hpclz.gates import check_plan
from hpclz.render.build import build_plan
from hpclz.rules.template.context import TemplateContext

REPO = Path(__file__).resolve().parent.parent


def _median_ms(rounds: int, action: Callable[[], object]) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main(rounds: int) -> None:
    start = time.perf_counter()
    schema_gate.load_schemas()
    print(f"schema registry load (cold): {(time.perf_counter() - start) * 1000:.1f} ms")
    plans = {p.stem: build_plan(load_config(p).config) for p in sorted((REPO / "configs").glob("*.yaml"))}
    print(f"{'preset':<16}{'deployments':>12}{'resources':>10}{'schema ms':>11}{'ms/res':>8}{'lint ms':>9}")
    for name, plan in plans.items():
        resources = sum(len(TemplateContext.from_deployment(d).resources) for d in plan.deployments)
        schema_ms = _median_ms(rounds, partial(check_plan, plan, lint=False, checkov=False))
        lint_ms = _median_ms(rounds, partial(check_plan, plan, schema=False, checkov=False))
        print(
            f"{name:<16}{len(plan.deployments):>12}{resources:>10}{schema_ms:>11.1f}"
            f"{schema_ms / resources:>8.2f}{lint_ms:>9.1f}"
        )
    if checkov_gate.find_checkov() is None:
        print("checkov not installed: scan not measured")
        return
    first = next(iter(plans.values()))
    combined = first.model_copy(update={"deployments": [d for plan in plans.values() for d in plan.deployments]})
    os.environ[gate_cache.CACHE_SWITCH_ENV] = "0"  # the scan itself; gate_cache_bench.py measures the cache
    start = time.perf_counter()
    report = check_plan(combined, schema=False, lint=False)
    print(
        f"checkov scan of {len(combined.deployments)} templates (main + allowlist re-run in parallel): "
        f"{time.perf_counter() - start:.1f} s, {len(report.findings)} findings"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
