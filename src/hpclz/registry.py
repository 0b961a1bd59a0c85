"""The one explicit registry of rules. A rule that is not listed here never runs.

Each family keeps its explicit tuple beside its modules (rules/config, rules/template, rules/live,
verify/checks); this module joins them. Meta-tests check IDs are unique and well formed and that every rule has a
passing and a failing case.
"""

from __future__ import annotations

from typing import Any

from hpclz.rules.base import Rule
from hpclz.rules.config import CONFIG_RULES
from hpclz.rules.live import LIVE_RULES
from hpclz.rules.template import TEMPLATE_RULES
from hpclz.verify.checks import VERIFY_RULES

__all__ = ["CONFIG_RULES", "LIVE_RULES", "TEMPLATE_RULES", "VERIFY_RULES", "all_rules"]


def all_rules() -> tuple[type[Rule[Any]], ...]:
    return CONFIG_RULES + TEMPLATE_RULES + VERIFY_RULES + LIVE_RULES
