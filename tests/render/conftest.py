from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from hpclz.config import load_config_text
from hpclz.render.build import build_plan
from hpclz.render.model import DeploymentPlan
from tests.conftest import PRESETS


@cache
def preset_plan(stem: str) -> DeploymentPlan:
    path = next(p for p in PRESETS if p.stem == stem)
    return build_plan(load_config_text(path.read_text(encoding="utf-8"), str(path)).config)


@pytest.fixture(params=[p.stem for p in PRESETS])
def plan(request: pytest.FixtureRequest) -> DeploymentPlan:
    return preset_plan(request.param)


def preset_text(stem: str) -> str:
    return (Path(__file__).resolve().parents[2] / "configs" / f"{stem}.yaml").read_text(encoding="utf-8")


def variant(stem: str, edit: Callable[[dict[str, Any]], None]) -> DeploymentPlan:
    """A preset with one change, rendered: the way to test one config field's effect.

    Written back as JSON (valid YAML) with YAML's line breaks and non-printable characters escaped: a YAML dump
    passes NEL (U+0085) through raw, and the loader reads it back as a line break."""
    data = YAML(typ="safe").load(preset_text(stem))
    edit(data)
    text = _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(data, ensure_ascii=False))
    return build_plan(load_config_text(text, f"{stem}-variant.yaml").config)


# Outside YAML's printable set, or a YAML line break: only ever inside a JSON string here, so \uXXXX is safe.
_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def resources_of(plan: DeploymentPlan, type_: str) -> list[dict[str, Any]]:
    from hpclz.arm.walk import iter_resources

    return [
        found.resource
        for d in plan.deployments
        for found in iter_resources(d.template.get("resources", []))
        if found.type == type_
    ]


def cyclecloud_vms(plan: DeploymentPlan) -> list[dict[str, Any]]:
    """The VMs of the compute deployment (the CycleCloud server), not the portal's (portal.*)."""
    compute = plan.model_copy(update={"deployments": [d for d in plan.deployments if d.component == "compute"]})
    return resources_of(compute, "Microsoft.Compute/virtualMachines")
