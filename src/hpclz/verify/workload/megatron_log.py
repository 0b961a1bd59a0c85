"""Megatron-LM's per-iteration log lines, read into numbers. Standard library only.

pretrain_gpt.py prints one line per --log-interval iterations, fields separated by ` | `, for example
(NVIDIA/Megatron-LM issue #756, H100, 2024-04-06):

    [2024-04-06 02:59:36] iteration       43/     100 | consumed samples:         5504 | elapsed time per
    iteration (ms): 5444.9 | throughput per GPU (TFLOP/s/GPU): 239.8 | learning rate: 8.600000E-06 | global
    batch size:   128 | lm loss: 1.825991E+00 | ... | number of skipped iterations:   0 | number of nan
    iterations:   0 |

Older releases print no timestamp and no throughput field (epfLLM/Megatron-LLM issue #11). The field names are
Megatron's training_log() in megatron/training/training.py. Lines that are not iteration lines (NCCL INFO,
warnings, srun's prefixes) are skipped, so a whole job log can be fed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_ITERATION = re.compile(r"\biteration\s+(\d+)/\s*(\d+)\s*\|")
_FIELDS = {
    "elapsed_ms": "elapsed time per iteration (ms)",
    "tflops_per_gpu": "throughput per GPU (TFLOP/s/GPU)",
    "global_batch": "global batch size",
    "lm_loss": "lm loss",
    "skipped": "number of skipped iterations",
    "nan": "number of nan iterations",
}


@dataclass(frozen=True)
class Iteration:
    iteration: int
    train_iters: int
    elapsed_ms: float
    lm_loss: float | None
    global_batch: int | None = None
    tflops_per_gpu: float | None = None
    skipped: int = 0
    nan: int = 0


def _field(line: str, name: str) -> str | None:
    at = line.find(name + ":")
    if at < 0:
        return None
    rest = line[at + len(name) + 1 :]
    return rest.split("|", 1)[0].strip() or None


def parse_line(line: str) -> Iteration | None:
    head = _ITERATION.search(line)
    if head is None:
        return None
    raw = {key: _field(line, name) for key, name in _FIELDS.items()}
    if raw["elapsed_ms"] is None:
        return None
    try:
        return Iteration(
            iteration=int(head.group(1)),
            train_iters=int(head.group(2)),
            elapsed_ms=float(raw["elapsed_ms"]),
            lm_loss=float(raw["lm_loss"]) if raw["lm_loss"] else None,
            global_batch=int(raw["global_batch"]) if raw["global_batch"] else None,
            tflops_per_gpu=float(raw["tflops_per_gpu"]) if raw["tflops_per_gpu"] else None,
            skipped=int(raw["skipped"] or 0),
            nan=int(raw["nan"] or 0),
        )
    except ValueError:
        return None  # a line cut off mid-number (a killed job) is not a measurement


def parse(lines: Iterable[str]) -> list[Iteration]:
    """Every iteration line, in order; a repeated iteration number (a restarted job appending to its log) keeps
    the later one, since that is the run that finished."""
    seen: dict[int, Iteration] = {}
    for line in lines:
        it = parse_line(line)
        if it is not None:
            seen.pop(it.iteration, None)
            seen[it.iteration] = it
    return sorted(seen.values(), key=lambda it: it.iteration)


def format_line(it: Iteration) -> str:
    """The same line Megatron prints, for the CPU stand-in, which must be read by the same parser."""
    parts = [
        f" iteration {it.iteration:8d}/{it.train_iters:8d}",
        f" elapsed time per iteration (ms): {it.elapsed_ms:.1f}",
    ]
    if it.tflops_per_gpu is not None:
        parts.append(f" throughput per GPU (TFLOP/s/GPU): {it.tflops_per_gpu:.1f}")
    if it.global_batch is not None:
        parts.append(f" global batch size: {it.global_batch:5d}")
    if it.lm_loss is not None:
        parts.append(f" lm loss: {it.lm_loss:.6E}")
    parts += [f" number of skipped iterations: {it.skipped:3d}", f" number of nan iterations: {it.nan:3d}"]
    return " |".join(parts) + " |"
