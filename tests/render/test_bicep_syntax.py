"""The Bicep writer's pieces: literals, expressions, parameters, and what it refuses to export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpclz.render.bicep import BicepExportError
from hpclz.render.bicep.module import module_text, parameter
from hpclz.render.bicep.syntax import template_string, value
from tests.render.bicep_tree import BicepReader, arm_resources, parse_bicep

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    ("arm", "bicep"),
    [
        ("plain", "'plain'"),
        ("it's", "'it\\'s'"),
        ("a\nb\\c", "'a\\nb\\\\c'"),
        ("${notInterpolated}", "'\\${notInterpolated}'"),
        ("[[literal]", "'[literal]'"),  # ARM's "[[" escape: a literal that starts with one bracket
        ("[parameters('vmSize')]", "vmSize"),
        ("[subscription().tenantId]", "subscription().tenantId"),
        (
            "[resourceId('rg', 'Microsoft.Network/virtualNetworks/subnets', 'v', 's')]",
            "resourceId('rg', 'Microsoft.Network/virtualNetworks/subnets', 'v', 's')",
        ),
        ("[json('{\"a\": 1}')]", "json('{\"a\": 1}')"),
    ],
)
def test_template_strings(arm: str, bicep: str) -> None:
    assert template_string(arm) == bicep


def test_numbers_quoted_keys_and_nesting() -> None:
    text = value({"odata.type": "x", "n": -3, "f": 1.5, "b": True, "z": None, "list": [1, {}]})
    assert "'odata.type': 'x'" in text and "n: -3" in text and "f: json('1.5')" in text
    assert "b: true" in text and "z: null" in text and "{}" in text


def test_written_strings_read_back_through_an_independent_parser(tmp_path: Path) -> None:
    tricky = "quote ' backslash \\ newline \n tab \t dollar ${x} unicode é"
    template = {
        "parameters": {},
        "resources": [
            {
                "type": "Microsoft.Network/publicIPAddresses",
                "apiVersion": "2024-05-01",
                "name": "p",
                "properties": {"note": tricky, "'quoted key'": 1},
            }
        ],
    }
    path = tmp_path / "m.bicep"
    path.write_text(module_text(template, target_scope="resourceGroup"), encoding="utf-8")
    body = BicepReader(parse_bicep(path)).declared()[("microsoft.network/publicipaddresses", ("p",))]["body"]
    assert body["properties"] == {"note": tricky, "'quoted key'": 1}


def test_parameters_match_the_bicep_microsoft_wrote_for_the_same_template() -> None:
    # tests/render/fixtures/README.md: azure-quickstart-templates storage-blob-container, compiled by Bicep.
    real = json.loads((FIXTURES / "quickstart-storage-blob-container.azuredeploy.json").read_text(encoding="utf-8"))
    lines = [line for name, spec in real["parameters"].items() for line in parameter(name, spec)]
    # Lines of that folder's main.bicep (commit 3154f532), verbatim.
    assert lines == [
        "@description('Specifies the name of the Azure Storage account.')",
        "param storageAccountName string",
        "@description('Specifies the name of the blob container.')",
        "param containerName string = 'logs'",
        "@description('Specifies the location in which the Azure Storage resources should be deployed.')",
        "param location string = resourceGroup().location",
    ]


def test_a_real_template_naming_resources_by_parameter_exports_equivalent_bicep(tmp_path: Path) -> None:
    # Resources named by parameters and format('{0}/{1}', ...), dependsOn by resourceId over parameters: the
    # shapes Bicep itself compiles to. The export must declare the same resources and dependencies.
    real = json.loads((FIXTURES / "quickstart-storage-blob-container.azuredeploy.json").read_text(encoding="utf-8"))
    path = tmp_path / "quickstart.bicep"
    path.write_text(module_text(real, target_scope="resourceGroup"), encoding="utf-8")
    assert BicepReader(parse_bicep(path)).declared() == arm_resources(real)
    container = arm_resources(real)[
        ("microsoft.storage/storageaccounts/blobservices/containers", ("('param', 'storageaccountname')", "default",
                                                                        "('param', 'containername')"))
    ]  # fmt: skip
    assert container["depends"] == {
        ("microsoft.storage/storageaccounts/blobservices", ("('param', 'storageaccountname')", "default"))
    }


@pytest.mark.parametrize(
    "template",
    [
        {"variables": {"x": 1}, "resources": []},
        {
            "resources": [
                {
                    "type": "Microsoft.Network/publicIPAddresses",
                    "apiVersion": "2024-05-01",
                    "name": "p",
                    "copy": {"name": "c", "count": 2},
                }
            ]
        },
        {"parameters": {"p": {"type": "weird"}}, "resources": []},
        {
            "resources": [
                {
                    "type": "Microsoft.Network/publicIPAddresses",
                    "apiVersion": "2024-05-01",
                    "name": "p",
                    "dependsOn": ["[resourceId('Microsoft.Network/natGateways', 'elsewhere')]"],
                }
            ]
        },
    ],
    ids=["variables", "copy-loop", "parameter-type", "dependency-outside-template"],
)
def test_unsupported_constructs_raise(template: dict[str, object]) -> None:
    with pytest.raises(BicepExportError):
        module_text(template, target_scope="resourceGroup")


def test_secure_parameters_are_decorated() -> None:
    assert parameter("secretX", {"type": "securestring"}) == ["@secure()", "param secretX string"]
