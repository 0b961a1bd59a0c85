"""The JSON Schema of the config, for editors (yaml-language-server) and CI."""

from __future__ import annotations

import json
from typing import Any

from hpclz.config.root import LandingZoneConfig

SCHEMA_ID = "https://hpclz.dev/schema/config-v1.json"


def config_schema() -> dict[str, Any]:
    schema = LandingZoneConfig.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def config_schema_json() -> str:
    return json.dumps(config_schema(), indent=2, sort_keys=True)
