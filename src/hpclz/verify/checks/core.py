"""What a node check is, in plain Python: the agent on a bare node imports only this and its siblings.

A check is a function `(facts, thresholds) -> Verdict`, declared with `@check(...)`, which makes it a CheckSpec
with its ID, title, fix hint and aznhc fault code. Each check module lists its checks in an explicit tuple and
hpclz.verify.checks.CHECKS joins them: a check not listed never runs. The pydantic-side wrappers (hpclz.verify.checks.rules)
turn each entry into a hpclz.rules.base.Rule subclass, so docs/rules.md, suppression and the registry
meta-tests see verify checks like any other rule, while the agent never imports pydantic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from hpclz.verify.probes.facts import NodeFacts
from hpclz.verify.thresholds import Thresholds

PASS, WARN, FAIL, NOT_MEASURED = "pass", "warn", "fail", "not_measured"


@dataclass
class Verdict:
    status: str
    message: str = ""
    measured: float | str | None = None
    threshold: float | str | None = None
    unit: str = ""
    nhc_code: str | None = None
    inconclusive: bool = False  # not measured because a tool failed, not because nothing applies


def inconclusive(why: str) -> Verdict:
    """A tool crashed or gave no usable reading: neither a failed device nor a pass."""
    return Verdict(NOT_MEASURED, why, inconclusive=True)


@dataclass
class Outcome:
    """One check's result; the same fields as hpclz.verify.model.CheckResult."""

    check_id: str
    title: str
    status: str
    message: str = ""
    measured: float | str | None = None
    threshold: float | str | None = None
    unit: str = ""
    nhc_code: str | None = None
    fix: str = ""
    duration_s: float = 0.0
    inconclusive: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


CheckFn = Callable[[NodeFacts, Thresholds], Verdict]


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    fix: str
    tier: str  # health | perf | nccl
    func: CheckFn
    nhc_code: str | None = None
    severity: str = "error"  # the worst a finding from it can be
    doc: str = field(default="", compare=False)

    def __call__(self, facts: NodeFacts, thresholds: Thresholds) -> Verdict:
        return self.func(facts, thresholds)

    def run(self, facts: NodeFacts, thresholds: Thresholds) -> Outcome:
        started = time.monotonic()
        try:
            verdict = self.func(facts, thresholds)
        except Exception as exc:  # one broken reading must not hide every other check's result
            verdict = Verdict(FAIL, f"check crashed: {type(exc).__name__}: {exc} (a bug in hpclz)")
        return Outcome(
            check_id=self.id,
            title=self.title,
            status=verdict.status,
            message=verdict.message,
            measured=verdict.measured,
            threshold=verdict.threshold,
            unit=verdict.unit,
            nhc_code=verdict.nhc_code or (self.nhc_code if verdict.status == FAIL else None),
            fix=self.fix if verdict.status in (FAIL, WARN) else "",
            duration_s=round(time.monotonic() - started, 6),
            inconclusive=verdict.inconclusive,
        )


def check(
    id: str, title: str, fix: str, *, tier: str = "health", nhc_code: str | None = None, severity: str = "error"
) -> Callable[[CheckFn], CheckSpec]:
    """Declare a check: the function becomes its CheckSpec (still callable as the function). Nothing is registered
    as a side effect: the module's tuple lists it."""

    def declare(func: CheckFn) -> CheckSpec:
        return CheckSpec(id, title, fix, tier, func, nhc_code, severity, (func.__doc__ or "").strip())

    return declare


def no_threshold(thresholds: Thresholds, metric: str) -> Verdict:
    return Verdict(NOT_MEASURED, f"not measured: no {metric} threshold for SKU {thresholds.sku or 'unknown'}")


def num(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value
