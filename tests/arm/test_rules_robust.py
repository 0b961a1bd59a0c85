"""Template rules never crash, whatever shape a template has: a crash would hide the other rules' findings."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hpclz.rules.base import run_rules
from hpclz.rules.template import LINT_RULES, TEMPLATE_RULES
from tests.arm.support import context, load

_keys = st.sampled_from(
    [
        "resources", "properties", "type", "name", "apiVersion", "location", "tags", "dependsOn", "parameters",
        "variables", "outputs", "value", "osProfile", "linuxConfiguration", "securityRules", "customData",
        "adminPassword", "defaultValue", "copy", "functions", "template", "sourceAddressPrefix", "x",
    ]
)  # fmt: skip
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(["[", "[]", "[parameters('location')]", "[concat(", "Internet", "22", "*", "securestring"]),
    st.text(max_size=8),
)
_json: st.SearchStrategy[Any] = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=25,
)


def _crashes(template: Any) -> list[str]:
    reported, _ = run_rules(LINT_RULES, context(template))
    return [f.message for f in reported if f.message.startswith("rule crashed")]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_keys, _json, max_size=6))
def test_lint_rules_never_crash_on_random_templates(template: dict[str, Any]) -> None:
    assert _crashes(template) == []


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_lint_rules_never_crash_on_a_mangled_real_template(data: st.DataObject) -> None:
    template = load("good.json")
    resource = data.draw(st.sampled_from(template["resources"]))
    key = data.draw(st.sampled_from(sorted(resource)))
    resource[key] = data.draw(_json)
    assert _crashes(template) == []


def test_every_template_rule_is_exercised_by_a_test_module() -> None:
    from tests.arm.test_lint_rules import CASES

    gate_rules = {"HPCLZ-TPL-001", "HPCLZ-TPL-002", "HPCLZ-TPL-030", "HPCLZ-TPL-031"}
    assert {rule.id for rule in TEMPLATE_RULES} == set(CASES) | gate_rules
