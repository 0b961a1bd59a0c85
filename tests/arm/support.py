"""Fixture loading for the template gate tests: hand-written templates under tests/arm/fixtures/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hpclz.arm.schema_gate import schemas_available
from hpclz.render.model import Deployment, DeploymentPlan, Scope
from hpclz.rules.template.context import TemplateContext
from tests.conftest import require

FIXTURES = Path(__file__).parent / "fixtures"
LOCATION = "southcentralus"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def context(
    template: dict[str, Any],
    location: str | None = LOCATION,
    supplied: frozenset[str] | None = None,
    values: dict[str, Any] | None = None,
) -> TemplateContext:
    return TemplateContext(
        template=template, deployment="fixture", location=location, supplied=supplied, parameter_values=values or {}
    )


def deployment(
    component: str, template: dict[str, Any], parameters: dict[str, Any] | None = None, secure: tuple[str, ...] = ()
) -> Deployment:
    return Deployment(
        name=f"hpclz-fixture-test-{component}",
        component=component,
        scope=Scope.RESOURCE_GROUP,
        resource_group="rg-fixture",
        location=LOCATION,
        template=template,
        parameters={"location": LOCATION, **(parameters or {})},
        secure_parameters={name: f"identity.secrets.{name}" for name in secure},
    )


def good_deployment() -> Deployment:
    """good.json with every parameter it needs, as render would pass them."""
    return deployment("good", load("good.json"), {"adminPublicKey": "ssh-ed25519 AAAAfixture"}, ("adminPassword",))


def plan_of(*deployments: Deployment) -> DeploymentPlan:
    return DeploymentPlan(
        landing_zone="fixture",
        environment="test",
        location=LOCATION,
        config_hash="0" * 64,
        deployments=list(deployments),
    )


def require_schemas() -> None:
    require(schemas_available(), "the packaged ARM schemas (src/hpclz/armschemas or $HPCLZ_ARM_SCHEMAS)")
