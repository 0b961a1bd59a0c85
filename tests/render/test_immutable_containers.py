"""`immutable: true` renders version-level WORM support on exactly the containers that ask, and the pinned
ARM schema (Microsoft.Storage 2023-05-01, ContainerProperties.immutableStorageWithVersioning) checks it."""

from __future__ import annotations

import copy
from typing import Any

from hpclz.arm.schema_gate import validate_template
from hpclz.arm.walk import iter_resources
from hpclz.config.loader import load_config
from hpclz.render.build import build_plan
from tests.arm.support import require_schemas
from tests.conftest import REPO

CONTAINERS = "Microsoft.Storage/storageAccounts/blobServices/containers"


def storage_template(preset: str) -> dict[str, Any]:
    plan = build_plan(load_config(REPO / "configs" / f"{preset}.yaml").config)
    return next(d.template for d in plan.deployments if d.component == "storage")


def containers(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = iter_resources(template["resources"], ("resources",), into_deployments=False)
    return {str(r.resource["name"]): r.resource for r in found if r.type == CONTAINERS}


def test_only_the_checkpoint_container_is_immutable() -> None:
    by_name = containers(storage_template("ai-training"))
    worm = {n for n, c in by_name.items() if "immutableStorageWithVersioning" in c["properties"]}
    assert worm == {"checkpoints"}
    assert by_name["checkpoints"]["properties"]["immutableStorageWithVersioning"] == {"enabled": True}
    assert not any(
        "immutableStorageWithVersioning" in c["properties"] for c in containers(storage_template("energy")).values()
    )


def test_the_pinned_schema_accepts_it_and_rejects_a_malformed_one() -> None:
    require_schemas()
    template = storage_template("ai-training")
    assert validate_template(template, "resourceGroup") == []
    broken = copy.deepcopy(template)
    checkpoints = containers(broken)["checkpoints"]
    checkpoints["properties"]["immutableStorageWithVersioning"] = {"enabled": "yes"}
    problems = validate_template(broken, "resourceGroup")
    assert problems and any("immutableStorageWithVersioning" in p.message for p in problems), problems


def blob_service(template: dict[str, Any]) -> dict[str, Any]:
    found = iter_resources(template["resources"], ("resources",), into_deployments=False)
    return next(r.resource for r in found if r.type == "Microsoft.Storage/storageAccounts/blobServices")


def test_point_in_time_restore_rides_on_the_change_feed_and_stays_inside_soft_delete() -> None:
    props = blob_service(storage_template("finance"))["properties"]
    assert props["restorePolicy"] == {"enabled": True, "days": 14}
    assert props["changeFeed"] == {"enabled": True}
    assert props["isVersioningEnabled"] is True
    assert props["restorePolicy"]["days"] < props["deleteRetentionPolicy"]["days"]
    energy = blob_service(storage_template("energy"))["properties"]
    assert "restorePolicy" not in energy and "changeFeed" not in energy


def test_the_pinned_schema_bounds_the_restore_window() -> None:
    """Microsoft.Storage 2023-05-01 RestorePolicyProperties.days: 1..365."""
    require_schemas()
    template = storage_template("finance")
    assert validate_template(template, "resourceGroup") == []
    blob_service(template)["properties"]["restorePolicy"]["days"] = 400
    assert any("restorePolicy" in p.message for p in validate_template(template, "resourceGroup"))
