"""Validate deployments whose resource groups do not exist yet, before anything is written.

ARM validates a resource-group deployment only into a group that exists, and on a first deploy none does. So
preflight wraps them, as CCWS deploys itself (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/mainTemplate.bicep:
a subscription-scope template that creates the group and nests the rest), in one subscription-scope template that
declares each group and nests each deployment into it, and asks ARM to validate that. Nothing is created: a
validate call never writes. Secure values travel as the wrapper's own secureString parameters, never inline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpclz.azure.arm import Arm, deployment_body
from hpclz.render.arm import API_VERSIONS, SUBSCRIPTION_TEMPLATE_SCHEMA
from hpclz.render.model import Deployment, Scope


def wrapper(
    deployments: list[Deployment], secrets: Mapping[str, Mapping[str, str]], location: str
) -> tuple[Deployment, dict[str, str]]:
    """One subscription-scope deployment (every missing group, each deployment nested into its group) and the
    secure values of its parameters."""
    parameters: dict[str, Any] = {}
    values: dict[str, str] = {}
    resources: list[dict[str, Any]] = []
    group_api = API_VERSIONS["Microsoft.Resources/resourceGroups"]
    for group in sorted({d.resource_group for d in deployments if d.resource_group}):
        resources.append({"type": "Microsoft.Resources/resourceGroups", "apiVersion": group_api, "name": group,
                          "location": location})  # fmt: skip
    names = {d.name for d in deployments}
    for d in deployments:
        inner = {k: {"value": v} for k, v in d.parameters.items()}
        for key, value in secrets.get(d.name, {}).items():
            outer = f"secure{len(values)}"
            parameters[outer] = {"type": "securestring"}
            values[outer] = value
            inner[key] = {"value": f"[parameters('{outer}')]"}
        resources.append(_nested(d, inner, [n for n in d.depends_on if n in names]))
    template = {
        "$schema": SUBSCRIPTION_TEMPLATE_SCHEMA,
        "contentVersion": "1.0.0.0",
        "parameters": parameters,
        "resources": resources,
    }
    whole = Deployment(
        name=f"hpclz-preflight-{deployments[0].name}"[:64],
        component="preflight",
        scope=Scope.SUBSCRIPTION,
        location=location,
        template=template,
    )
    return whole, values


def _nested(d: Deployment, parameters: dict[str, Any], after: list[str]) -> dict[str, Any]:
    group_id = f"[resourceId('Microsoft.Resources/resourceGroups', '{d.resource_group}')]"
    return {
        "type": "Microsoft.Resources/deployments",
        "apiVersion": API_VERSIONS["Microsoft.Resources/deployments"],
        "name": d.name,
        "resourceGroup": d.resource_group,
        "dependsOn": [group_id, *after],
        "properties": {
            "mode": "Incremental",
            "expressionEvaluationOptions": {"scope": "inner"},
            "template": d.template,
            "parameters": parameters,
        },
    }


def validate_in_new_groups(
    arm: Arm, deployments: list[Deployment], secrets: Mapping[str, Mapping[str, str]], location: str
) -> None:
    """Raises the SDK's error when ARM refuses any of them; the caller records it as a finding."""
    if not deployments:
        return
    whole, values = wrapper(deployments, secrets, location)
    arm.validate(whole, deployment_body(whole, values, {}))
