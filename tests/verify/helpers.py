"""Paths of the verify fixtures and a shortcut to run the agent on them in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hpclz.verify.agent import run_agent
from tests.conftest import FIXTURES as REAL_FIXTURES

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOOD = FIXTURES / "h200-good"
FAULTS = FIXTURES / "h200-faults"
HBV3 = FIXTURES / "hbv3-good"
REAL_H200 = REAL_FIXTURES / "gpu" / "h200"
H200 = "Standard_ND96isr_H200_v5"


def agent(fixtures: Path, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("tier", "perf")
    kwargs.setdefault("with_nccl", True)
    return run_agent(fixtures=fixtures, node="node-under-test", **kwargs)


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["check_id"]: c for c in report["checks"]}
