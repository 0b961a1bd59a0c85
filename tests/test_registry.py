"""Meta-tests over the one registry: IDs, metadata every rule must carry, the generated reference."""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Any

import pytest

from hpclz.docsgen import rules_reference
from hpclz.findings import Severity
from hpclz.registry import CONFIG_RULES, all_rules
from hpclz.rules.base import RULE_ID, Rule

# An area's rules live in its module; storage's checkpoint-integrity rules have one of their own.
AREA_MODULE: dict[str, tuple[str, ...]] = {
    "ORG": ("organization",),
    "IDN": ("identity",),
    "NET": ("network",),
    "CMP": ("compute", "accounting", "images", "racks"),
    "STO": ("storage", "integrity"),
    "SEC": ("security",),
    "PRT": ("portal",),
    "ZON": ("zones",),
    "MON": ("operations", "metrics", "resilience"),
    "MNT": ("operations", "resilience", "shared_backup"),
    "COST": ("operations",),
}


def test_rule_ids_are_unique() -> None:
    counts = Counter(r.id for r in all_rules())
    assert [i for i, n in counts.items() if n > 1] == []


def test_registry_has_at_least_thirty_config_rules() -> None:
    assert len(CONFIG_RULES) >= 30


@pytest.mark.parametrize("rule", CONFIG_RULES, ids=lambda r: r.id)
def test_config_rule_metadata(rule: type[Rule[Any]]) -> None:
    assert RULE_ID.match(rule.id), rule.id
    modules = {f"hpclz.rules.config.{name}" for name in AREA_MODULE[rule.area()]}
    assert rule.__module__ in modules, f"{rule.id} lives in {rule.__module__}"
    assert isinstance(rule.severity, Severity)
    assert rule.title and "\n" not in rule.title and len(rule.title) <= 90
    assert rule.fix.strip(), f"{rule.id} has no fix hint"
    assert inspect.getdoc(rule), f"{rule.id} has no docstring saying why it matters"
    assert rule.docs() == f"hpclz explain {rule.id}"


def test_rules_reference_lists_every_rule_with_its_anchor() -> None:
    text = rules_reference()
    for rule in all_rules():
        assert f"## {rule.id}\n" in text
        assert f"(#{rule.id.lower()})" in text
