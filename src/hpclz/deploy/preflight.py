"""Preflight before anything is created: access, provider registration, ARM validate, SKUs and quota."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping

from hpclz.azure.arm import KEY_VAULT_API, NETWORK_API, STORAGE_API, Arm, deployment_body
from hpclz.azure.errors import azure_errors, describe, sdk_error
from hpclz.config.loader import LoadedConfig
from hpclz.config.network import ExistingVnet
from hpclz.deploy.live_reads import read_existing
from hpclz.deploy.new_groups import validate_in_new_groups
from hpclz.deploy.records import declared_types
from hpclz.findings import Finding
from hpclz.naming import NameBuilder
from hpclz.render.model import DeploymentPlan, Scope
from hpclz.rules.base import run_rules
from hpclz.rules.config.images import pinned_marketplace_images
from hpclz.rules.live import LIVE_RULES
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.flowlogs import watcher_id
from hpclz.rules.live.images import gallery_definition
from hpclz.rules.live.marketplace import MarketplaceTermsNotAccepted
from hpclz.rules.live.subscription import LiveFactsUnavailable


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
    _validate(arm, plan, secrets, unchanged, ctx)
    _features(arm, plan, ctx)
    _existing_vnet(arm, loaded, ctx)
    read_existing(arm, ctx)
    _deleted_vault(arm, loaded, plan, ctx)
    _global_names(arm, plan, ctx)
    _network_watcher(arm, loaded, plan, ctx)
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
    _marketplace_images(arm, loaded, plan.location, ctx)
    marketplace_terms(arm, plan, ctx)
    return ctx


def purchase_plans(plan: DeploymentPlan) -> list[tuple[str, str, str]]:
    """(publisher, product, name) of every VM purchase plan the templates name (the CycleCloud server's image)."""
    found = {
        (str(p.get("publisher")), str(p.get("product")), str(p.get("name")))
        for d in plan.deployments
        for r in d.resources()
        if str(r.get("type", "")).lower() == "microsoft.compute/virtualmachines"
        and isinstance(p := r.get("plan"), dict)
    }
    return sorted(found)


def marketplace_terms(arm: Arm, plan: DeploymentPlan, ctx: LiveContext) -> None:
    """Whether this subscription accepted the terms of each purchase plan: ARM refuses a VM from a Marketplace image
    with a plan whose terms it has not (HPCLZ-CMP-110), well into the deploy."""
    for publisher, product, name in purchase_plans(plan):
        key = f"{publisher}:{product}:{name}"
        try:
            terms = arm.marketplace_terms(publisher, product, name)
        except sdk_error() as exc:
            ctx.unavailable[f"Marketplace terms of {key}"] = describe(exc).one_line()
            continue
        ctx.marketplace_terms[key] = (terms.get("properties") or {}).get("accepted") is True


def _marketplace_images(arm: Arm, loaded: LoadedConfig, location: str, ctx: LiveContext) -> None:
    """Each pinned marketplace node image, as the region's Virtual Machine Images - Get answers (HPCLZ-CMP-109)."""
    AzureError = sdk_error()
    for _, _, urn in pinned_marketplace_images(loaded.config.compute):
        if urn not in ctx.marketplace_images:
            try:
                ctx.marketplace_images[urn] = arm.marketplace_image(location, urn)
            except AzureError as exc:
                ctx.unavailable[f"marketplace image {urn}"] = describe(exc).one_line()


def _validate(
    arm: Arm,
    plan: DeploymentPlan,
    secrets: Mapping[str, Mapping[str, str]],
    unchanged: Collection[str],
    ctx: LiveContext,
) -> None:
    """ARM validate for every deployment that will be submitted (unchanged ones are not, so no POST for a no-op
    deploy). Those whose group does not exist yet are validated together, nested under a subscription-scope
    template that declares the groups (hpclz.deploy.new_groups): nothing is written before all have passed."""
    AzureError = sdk_error()
    existing_groups: dict[str, bool] = {}
    in_new_groups = []
    for d in (d for d in plan.deployments if d.name not in unchanged):
        if d.scope is Scope.RESOURCE_GROUP and d.resource_group:
            if d.resource_group not in existing_groups:
                existing_groups[d.resource_group] = arm.get_group(d.resource_group) is not None
            if not existing_groups[d.resource_group]:
                in_new_groups.append(d)
                continue
        try:
            arm.validate(d, deployment_body(d, secrets.get(d.name, {}), {}))
        except AzureError as exc:
            ctx.validation_errors[d.name] = describe(exc).one_line()
    try:
        validate_in_new_groups(arm, in_new_groups, secrets, plan.location)
    except AzureError as exc:
        ctx.validation_errors[", ".join(d.name for d in in_new_groups)] = describe(exc).one_line()


# Template property -> the subscription feature it needs (Microsoft.Compute, host-based encryption).
FEATURES = {'"encryptionAtHost": true': "Microsoft.Compute/EncryptionAtHost"}


def _features(arm: Arm, plan: DeploymentPlan, ctx: LiveContext) -> None:
    AzureError = sdk_error()

    rendered = " ".join(json.dumps(d.template) for d in plan.deployments)
    for needle, name in FEATURES.items():
        if needle not in rendered:
            continue
        try:
            ctx.features[name] = arm.feature_state(*name.split("/", 1))
        except AzureError as exc:
            ctx.unavailable[f"feature registration of {name}"] = describe(exc).one_line()


def _existing_vnet(arm: Arm, loaded: LoadedConfig, ctx: LiveContext) -> None:
    """The VNets the config names but hpclz does not create: an existing spoke, and the hub it uses gateways of."""
    network = loaded.config.network
    if isinstance(network.vnet, ExistingVnet):
        try:
            ctx.existing_vnet = arm.virtual_network(network.vnet.resource_id) or {}
        except sdk_error() as exc:
            ctx.unavailable[f"existing VNet {network.vnet.resource_id}"] = describe(exc).one_line()
    hub = network.hub_peering
    if hub is not None and hub.use_remote_gateways:
        try:
            ctx.hub_vnet = arm.virtual_network(hub.remote_vnet_id) or {}
        except sdk_error() as exc:
            ctx.unavailable[f"hub VNet {hub.remote_vnet_id}"] = describe(exc).one_line()


def _deleted_vault(arm: Arm, loaded: LoadedConfig, plan: DeploymentPlan, ctx: LiveContext) -> None:
    if loaded.config.identity.key_vault.mode != "new":
        return
    name = NameBuilder(loaded.config).name("key_vault")
    try:
        ctx.deleted_vault = arm.deleted_vault(plan.location, name)
    except sdk_error() as exc:
        ctx.unavailable[f"deleted vaults named {name}"] = describe(exc).one_line()


def _network_watcher(arm: Arm, loaded: LoadedConfig, plan: DeploymentPlan, ctx: LiveContext) -> None:
    """network.flow_logs: the Network Watcher the flow log goes under, and whether the zone's VNet is there yet."""
    if not loaded.config.network.flow_logs.enabled:
        return
    vnet = loaded.config.network.vnet
    try:
        ctx.network_watcher = (
            arm.get_resource(watcher_id(loaded, arm.subscription_id, plan.location), NETWORK_API) or {}
        )
        if isinstance(vnet, ExistingVnet):
            ctx.vnet_exists = True
        else:
            names = NameBuilder(loaded.config)
            own = (
                f"/subscriptions/{arm.subscription_id}/resourceGroups/{names.resource_group('network', loaded.config.organization.resource_groups.network)}"
                f"/providers/Microsoft.Network/virtualNetworks/{names.name('virtual_network')}"
            )
            ctx.vnet_exists = arm.get_resource(own, NETWORK_API) is not None
    except sdk_error() as exc:
        ctx.unavailable["the flow log's Network Watcher"] = describe(exc).one_line()


# Types whose names are global, with the provider that answers checkNameAvailability for them.
GLOBAL_NAMES = {
    "Microsoft.Storage/storageAccounts": ("Microsoft.Storage", STORAGE_API),
    "Microsoft.KeyVault/vaults": ("Microsoft.KeyVault", KEY_VAULT_API),
}


def _global_names(arm: Arm, plan: DeploymentPlan, ctx: LiveContext) -> None:
    """Each storage account and vault the plan creates: fine when it already exists in its own group (a redeploy),
    else the provider must call the name available."""
    for d in plan.deployments:
        for resource in d.resources():
            kind, name = str(resource.get("type", "")), str(resource.get("name", ""))
            if kind not in GLOBAL_NAMES or name.startswith("[") or not d.resource_group:
                continue
            namespace, api = GLOBAL_NAMES[kind]
            own = f"/subscriptions/{arm.subscription_id}/resourceGroups/{d.resource_group}/providers/{kind}/{name}"
            try:
                if arm.get_resource(own, api) is not None:
                    continue
                answer = arm.name_available(namespace, kind, name, api)
            except sdk_error() as exc:
                ctx.unavailable[f"name availability of {name}"] = describe(exc).one_line()
                continue
            if not answer.get("nameAvailable", True):
                ctx.names_taken[name] = f"{answer.get('reason')}: {answer.get('message')}"


def marketplace_findings(
    arm: Arm, loaded: LoadedConfig, plan: DeploymentPlan, suppress: Iterable[str] = ()
) -> list[Finding]:
    """`plan --what-if`'s share of preflight: the Marketplace terms (HPCLZ-CMP-110), or why they could not be read."""
    ctx = LiveContext(loaded=loaded, location=plan.location)
    with azure_errors("reading the Marketplace terms"):
        marketplace_terms(arm, plan, ctx)
    rules = (MarketplaceTermsNotAccepted, LiveFactsUnavailable)
    reported, _ = run_rules(rules, ctx, [*loaded.config.suppress, *suppress])
    return reported


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
