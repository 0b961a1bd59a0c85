"""The training proof's per-GPU expectations (expectations.json beside this file), each with its source."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class Expectation:
    gpu_model: str | None
    peak_bf16_tflops: float | None
    min_mfu: float | None
    min_weak_scaling: float
    relative_slow: float
    sources: dict[str, str]


@cache
def _table() -> dict[str, Any]:
    text = resources.files("hpclz.verify.workload").joinpath("expectations.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def for_gpu(gpu_model: str | None) -> Expectation:
    table = _table()
    defaults, entry = table["defaults"], table["gpus"].get(gpu_model or "", {})
    merged = {**defaults, **entry}

    def value(key: str) -> float | None:
        return float(merged[key]["value"]) if key in merged else None

    return Expectation(
        gpu_model=gpu_model,
        peak_bf16_tflops=value("peak_bf16_tflops"),
        min_mfu=value("min_mfu"),
        min_weak_scaling=float(defaults["min_weak_scaling"]["value"]),
        relative_slow=float(defaults["relative_slow"]["value"]),
        sources={key: str(item["source"]) for key, item in merged.items()},
    )


def known_gpus() -> list[str]:
    return sorted(_table()["gpus"])
