"""Node checks (HPCLZ-VFY-NNN). CHECKS joins each module's explicit tuple, in order; VERIFY_RULES wraps them as rules.

Two layers, so the node agent stays standard-library only:
- hpclz.verify.checks.core / gpu / host / perf: the check logic as plain functions over plain dataclasses.
  They import nothing outside the standard library and hpclz.verify's stdlib modules, so the agent can run them
  on a bare GPU node (`python3 -m hpclz.verify.agent`, or the single-file bundle from hpclz.verify.bundle).
- hpclz.verify.checks.rules: one hpclz.rules.base.Rule subclass per check, made from the same table, for the
  registry, docs/rules.md and suppression. It imports pydantic, so this package loads it lazily: importing
  hpclz.verify.checks.<module> never pulls it in; reading VERIFY_RULES does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpclz.verify.checks.core import CheckSpec
from hpclz.verify.checks.gpu import GPU_CHECKS
from hpclz.verify.checks.host import HOST_CHECKS
from hpclz.verify.checks.perf import PERF_CHECKS

if TYPE_CHECKING:
    from hpclz.rules.base import Rule

    VERIFY_RULES: tuple[type[Rule[Any]], ...]

__all__ = ["CHECKS", "VERIFY_RULES", "CheckSpec", "checks_for"]

CHECKS: tuple[CheckSpec, ...] = (*GPU_CHECKS, *HOST_CHECKS, *PERF_CHECKS)


def checks_for(tiers: set[str]) -> list[CheckSpec]:
    return [spec for spec in CHECKS if spec.tier in tiers]


def __getattr__(name: str) -> Any:
    if name == "VERIFY_RULES":
        from hpclz.verify.checks.rules import VERIFY_RULES

        return VERIFY_RULES
    raise AttributeError(name)
