"""The schema gate against the official ARM schemas packaged in src/hpclz/armschemas, offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from referencing.exceptions import NoSuchResource

from hpclz.arm import schema_gate
from hpclz.arm.api_versions import PINNED_API_VERSIONS
from hpclz.errors import HpclzError
from hpclz.findings import Finding
from hpclz.rules.base import run_rules
from hpclz.rules.template import SCHEMA_RULES
from tests.arm.support import context, load, require_schemas


@pytest.fixture(autouse=True)
def _schemas() -> None:
    require_schemas()


def schema_findings(template: dict[str, Any], scope: str = "resourceGroup") -> list[Finding]:
    ctx = context(template)
    ctx.scope = scope
    reported, _ = run_rules(SCHEMA_RULES, ctx)
    return reported


def test_good_template_passes() -> None:
    assert schema_findings(load("good.json")) == []


def test_wrong_property_types_are_found_in_resources_and_nested_children() -> None:
    findings = schema_findings(load("bad/schema-wrong-type.json"))
    assert [(f.rule_id, f.path) for f in findings] == [
        ("HPCLZ-TPL-001", "resources[vnet-a].properties.addressSpace.addressPrefixes"),
        ("HPCLZ-TPL-001", "resources[vnet-a].resources[s1].properties.addressPrefix"),
    ]
    first, second = findings
    assert "deployment fixture, resource Microsoft.Network/virtualNetworks/vnet-a" in first.message
    assert "'10.0.0.0/16' is not of type 'array'" in first.message
    assert "Microsoft.Network/virtualNetworks/subnets/s1" in second.message
    assert "24 is not of type 'string'" in second.message
    assert first.line is not None and second.line is not None and first.line < second.line


def test_unknown_api_version_is_an_error() -> None:
    (finding,) = schema_findings(load("bad/schema-unknown-api.json"))
    assert finding.rule_id == "HPCLZ-TPL-002"
    assert "resourceGroup:Microsoft.Network/networkSecurityGroups@2019-02-01" in finding.message
    assert finding.path == "resources[nsg-a].apiVersion"


def test_unknown_type_is_an_error() -> None:
    (finding,) = schema_findings(load("bad/schema-unknown-type.json"))
    assert finding.rule_id == "HPCLZ-TPL-002"
    assert "Microsoft.Network/virtualRouters@2024-05-01" in finding.message


def test_scope_picks_the_schema() -> None:
    group = {
        "type": "Microsoft.Resources/resourceGroups",
        "apiVersion": "2024-03-01",
        "name": "rg",
        "location": "x",
        "properties": {},
    }
    template = {**load("bad/schema-unknown-type.json"), "resources": [group]}
    assert schema_findings(template, scope="subscription") == []
    assert [f.rule_id for f in schema_findings(template, scope="resourceGroup")] == ["HPCLZ-TPL-002"]


def test_envelope_is_checked() -> None:
    (finding,) = schema_findings(load("bad/schema-envelope.json"))
    assert finding.rule_id == "HPCLZ-TPL-001"
    assert "template envelope: contentVersion" in finding.message


def test_parameter_types_are_read_without_case_as_arm_does() -> None:
    template = load("good.json")
    template["parameters"]["adminPassword"]["type"] = "secureString"
    assert schema_findings(template) == []


def test_inline_nested_deployment_is_validated() -> None:
    inner = load("bad/schema-unknown-api.json")
    nested = {
        "type": "Microsoft.Resources/deployments",
        "apiVersion": "2024-03-01",
        "name": "nested",
        "properties": {"mode": "Incremental", "template": inner},
    }
    template = {**load("good.json"), "resources": [nested]}
    (finding,) = schema_findings(template)
    assert finding.path == "resources[nested].properties.template.resources[nsg-a].apiVersion"


def test_registry_never_fetches_from_the_network() -> None:
    schemas = schema_gate.load_schemas()
    with pytest.raises(NoSuchResource):
        schemas.registry.get_or_retrieve("https://example.invalid/x.json")


def test_pinned_versions_match_the_schema_index() -> None:
    indexed = {key.split(":", 1)[1].lower() for key in schema_gate.load_schemas().index}
    pinned = {f"{t}@{v}" for t, v in PINNED_API_VERSIONS.items()}
    assert pinned == indexed


def test_missing_schema_folder_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(schema_gate.SCHEMAS_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(HpclzError, match=r"ARM schemas not found at .*nowhere") as raised:
        schema_gate.load_schemas()
    assert schema_gate.SCHEMAS_ENV in str(raised.value)


def test_schema_folder_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A copy of the folder elsewhere works, proving nothing depends on the default location."""
    source = schema_gate.schemas_dir() / "schemas"
    for file in source.rglob("*.json"):
        if file.name in (
            "resourceIndex.json",
            "definitions.json",
            "deploymentTemplate.json",
            "Microsoft.Network.NRP.json",
        ):
            target = tmp_path / "schemas" / file.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(file.read_bytes())
    monkeypatch.setenv(schema_gate.SCHEMAS_ENV, str(tmp_path))
    nsg = load("bad/tpl-024-nsg-open.json")
    assert schema_gate.validate_template(nsg, "resourceGroup") == []
    assert json.loads((tmp_path / "schemas" / "resourceIndex.json").read_text())


@pytest.mark.parametrize(
    ("target", "scope_read"),
    [({"subscriptionId": "[subscription().subscriptionId]"}, "subscription"), ({"resourceGroup": "rg-x"}, "group")],
)
def test_a_nested_deployment_is_checked_at_the_scope_arm_runs_it(target: dict[str, str], scope_read: str) -> None:
    """A subscriptionId without a resourceGroup runs at the subscription ("Scope to subscription",
    learn.microsoft.com azure-resource-manager/templates/deploy-to-resource-group): a resource group is a
    subscription-scope type, so it passes there and is unknown in a group."""
    group = {"type": "Microsoft.Resources/resourceGroups", "apiVersion": "2024-03-01", "name": "rg", "location": "x"}
    inner = {**load("bad/schema-unknown-type.json"), "resources": [{**group, "properties": {}}]}
    nested = {
        "type": "Microsoft.Resources/deployments",
        "apiVersion": "2024-03-01",
        "name": "nested",
        "location": "x",
        **target,
        "properties": {"mode": "Incremental", "template": inner},
    }
    found = [f.rule_id for f in schema_findings({**load("good.json"), "resources": [nested]})]
    assert found == ([] if scope_read == "subscription" else ["HPCLZ-TPL-002"])
