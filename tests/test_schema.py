"""`hpclz schema` must describe every preset, so editors (yaml-language-server) can check them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

from tests.conftest import REPO


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from hpclz.cli import main

    out = tmp_path_factory.mktemp("schema") / "schema.json"
    assert main(["schema", "--out", str(out)]) == 0
    loaded: dict[str, Any] = json.loads(out.read_text())
    return loaded


def test_schema_is_valid_json_schema(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False


def test_schema_accepts_every_preset(schema: dict[str, Any], preset_path: Path) -> None:
    document = YAML(typ="safe").load(preset_path.read_text())
    jsonschema.Draft202012Validator(schema).validate(document)


def test_schema_rejects_unknown_keys(schema: dict[str, Any]) -> None:
    document = YAML(typ="safe").load((REPO / "configs" / "energy.yaml").read_text())
    document["network"]["nat_gatway"] = {"enabled": True}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(document)


def test_committed_schema_matches_the_model(schema: dict[str, Any]) -> None:
    assert json.loads((REPO / "docs" / "hpclz.schema.json").read_text()) == schema
