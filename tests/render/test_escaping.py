"""Hostile config text cannot break a rendered template: every value reaches it through an escaping filter."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpclz.arm.walk import iter_resources
from hpclz.render.arm import API_VERSIONS
from hpclz.secretscan import REFERENCE_START, looks_like_secret
from tests.render.conftest import variant

# Validate refuses control characters, `${...}` outside Key Vault secrets and credential-shaped values
# (hpclz.config.scan), so those never reach a template; everything else must survive escaping unchanged.
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda text: REFERENCE_START not in text and looks_like_secret(text) is None
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=TEXT, value=TEXT)
def test_any_tag_text_renders_to_the_same_tag(key: str, value: str) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["metadata"]["tags"][key] = value

    plan = variant("manufacturing", edit)
    for d in plan.deployments:
        for found in iter_resources(d.template["resources"]):
            tags = found.resource.get("tags")
            if tags is not None and key not in ("hpclz-zone", "hpclz-managed", "hpclz-environment", "hpclz-data"):
                assert tags[key] == value


def test_unpinned_resource_type_is_refused() -> None:
    with pytest.raises(KeyError, match="no pinned API version"):
        API_VERSIONS["Microsoft.ContainerService/managedClusters"]
    assert API_VERSIONS["Microsoft.Network/virtualNetworks"] == "2024-05-01"
