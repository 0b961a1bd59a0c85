"""Builders for plan tests: a config edited in place, and the state an apply of a config would leave."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any

from hpclz.config.loader import load_config
from hpclz.config.root import LandingZoneConfig
from hpclz.plan.config_diff import config_snapshot
from hpclz.plan.policies import is_data_bearing
from hpclz.plan.resources import SUBSCRIPTION_PLACEHOLDER, desired_resources
from hpclz.render.build import build_plan
from hpclz.render.model import DeploymentPlan
from hpclz.state.model import DeploymentRecord, DeploymentStatus, ResourceRecord, StateDocument
from tests.conftest import REPO

SUBSCRIPTION = "00000000-0000-0000-0000-00000000c0de"


def preset(name: str) -> LandingZoneConfig:
    return load_config(REPO / "configs" / f"{name}.yaml").config


def edited(config: LandingZoneConfig, edit: Callable[[dict[str, Any]], None]) -> LandingZoneConfig:
    data = copy.deepcopy(config_snapshot(config))
    edit(data)
    return LandingZoneConfig.model_validate(data)


def applied_state(
    config: LandingZoneConfig,
    plan: DeploymentPlan | None = None,
    *,
    properties_only: bool = False,
    serial: int = 3,
) -> StateDocument:
    """What a successful apply of `plan` records. properties_only: the shape states written before
    hpclz.deploy.records kept whole bodies still have (only each resource's `properties`, real IDs and
    names, role assignments named by GUID)."""
    plan = plan or build_plan(config)
    records = []
    for d in desired_resources(plan):
        rid, name = d.id.replace(SUBSCRIPTION_PLACEHOLDER, SUBSCRIPTION), d.name
        if properties_only and name.startswith("["):
            name = str(uuid.uuid5(uuid.NAMESPACE_URL, rid))
            rid = rid.replace(d.name, name)
        records.append(
            ResourceRecord(
                id=rid,
                type=d.type,
                name=name,
                api_version=d.api_version,
                deployment=d.deployment,
                data_bearing=is_data_bearing(d.type),
                properties=d.body.get("properties", {}) if properties_only else d.body,
            )
        )
    deployments = {
        d.name: DeploymentRecord(
            name=d.name,
            component=d.component,
            scope=d.scope.value,
            resource_group=d.resource_group,
            template_hash=d.template_hash(),
            status=DeploymentStatus.SUCCEEDED,
        )
        for d in plan.deployments
    }
    return StateDocument(
        landing_zone=plan.landing_zone,
        environment=plan.environment,
        serial=serial,
        subscription_id=SUBSCRIPTION,
        resources=records,
        deployments=deployments,
        applied_config=config_snapshot(config),
    )
