"""Preflight before anything is created: access, provider registration, ARM validate, SKUs and quota."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from hpclz.azure.arm import Arm, deployment_body
from hpclz.azure.errors import azure_errors, describe, sdk_error
from hpclz.config.loader import LoadedConfig
from hpclz.deploy.live_rules import LIVE_RULES, LiveContext, gallery_definition
from hpclz.deploy.records import declared_types
from hpclz.findings import Finding
from hpclz.render.model import DeploymentPlan, Scope
from hpclz.rules.base import run_rules


def check_access(arm: Arm) -> None:
    """A token and a visible subscription, or one clear error (exit 5) before anything else."""
    with azure_errors(f"checking access to subscription {arm.subscription_id}"):
        arm.provider_state("Microsoft.Resources")


def namespaces(plan: DeploymentPlan) -> list[str]:
    found = {t.split("/")[0] for d in plan.deployments for t in declared_types(d.template)}
    return sorted(n for n in found if n and not n.startswith("["))


def gather(
    arm: Arm,
    loaded: LoadedConfig,
    plan: DeploymentPlan,
    secrets: Mapping[str, Mapping[str, str]],
    unchanged: Collection[str] = (),
) -> LiveContext:
    AzureError = sdk_error()

    ctx = LiveContext(loaded=loaded, location=plan.location)
    for namespace in namespaces(plan):
        try:
            state = arm.provider_state(namespace)
        except AzureError as exc:
            ctx.unavailable[f"provider registration of {namespace}"] = describe(exc).one_line()
            continue
        if state != "Registered":
            ctx.unregistered[namespace] = state
    existing_groups: dict[str, bool] = {}
    for d in (d for d in plan.deployments if d.name not in unchanged):
        # Unchanged deployments are not submitted, so not validated either (a no-op deploy makes no POST).
        # ARM validates a resource-group deployment only into a group that exists; groups this plan
        # creates are validated by ARM again when their deployment is submitted.
        if d.scope is Scope.RESOURCE_GROUP and d.resource_group:
            if d.resource_group not in existing_groups:
                existing_groups[d.resource_group] = arm.get_group(d.resource_group) is not None
            if not existing_groups[d.resource_group]:
                continue
        try:
            arm.validate(d, deployment_body(d, secrets.get(d.name, {}), {}))
        except AzureError as exc:
            ctx.validation_errors[d.name] = describe(exc).one_line()
    try:
        ctx.skus = arm.skus(plan.location)
    except AzureError as exc:
        ctx.unavailable["Compute resource SKUs API"] = describe(exc).one_line()
    try:
        ctx.usages = arm.usages(plan.location)
    except AzureError as exc:
        ctx.unavailable["Compute usage API"] = describe(exc).one_line()
    for _, _, _, image in loaded.config.compute.custom_images():
        for resource_id in dict.fromkeys((image, gallery_definition(image))):
            if resource_id and resource_id not in ctx.images:
                try:
                    ctx.images[resource_id] = arm.custom_image(resource_id)
                except AzureError as exc:
                    ctx.unavailable[f"custom image {resource_id}"] = describe(exc).one_line()
    return ctx


def preflight(
    arm: Arm,
    loaded: LoadedConfig,
    plan: DeploymentPlan,
    secrets: Mapping[str, Mapping[str, str]],
    suppress: Iterable[str] = (),
    unchanged: Collection[str] = (),
) -> list[Finding]:
    check_access(arm)
    with azure_errors("preflight"):
        ctx = gather(arm, loaded, plan, secrets, unchanged)
    reported, _ = run_rules(LIVE_RULES, ctx, [*loaded.config.suppress, *suppress])
    return reported
