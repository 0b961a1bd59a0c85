"""Organization rules: tags, allowed regions, resource names from the naming convention."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hpclz.catalog import load_regions
from hpclz.config.identity import Area
from hpclz.config.source_map import PathPart
from hpclz.findings import Finding, Severity
from hpclz.naming import NAME_RULES
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

TAG_FORBIDDEN = set("<>%&\\?/")


class RequiredTagsPresent(Rule[ConfigContext]):
    """Cost reports and policy depend on the required tags; with require_tags policy on, untagged resources are
    denied at deployment."""

    id = "HPCLZ-ORG-001"
    severity = Severity.ERROR
    title = "Required tag missing from metadata.tags"
    fix = "Add the tag to metadata.tags, or remove it from organization.required_tags."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        tags = ctx.config.metadata.tags
        for i, key in enumerate(ctx.config.organization.required_tags):
            if key not in tags:
                yield self.finding(
                    ctx, ("organization", "required_tags", i), f"required tag {key!r} is not in metadata.tags"
                )


class LocationAllowed(Rule[ConfigContext]):
    """The allowed-locations policy would deny every resource of a landing zone deployed elsewhere."""

    id = "HPCLZ-ORG-002"
    severity = Severity.ERROR
    title = "Location is not in the allowed locations"
    fix = "Add metadata.location to organization.policies.allowed_locations, or deploy to an allowed region."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        allowed = ctx.config.organization.policies.allowed_locations
        location = ctx.config.metadata.location
        # An unknown region is HPCLZ-ORG-005's finding: a typo is reported once, not again here.
        if allowed and location not in allowed and load_regions().get(location) is not None:
            yield self.finding(
                ctx, ("metadata", "location"), f"{location} is not in allowed_locations ({', '.join(allowed)})"
            )


class TagKeysValid(Rule[ConfigContext]):
    """Azure tag names cannot contain < > % & \\ ? /; such a tag fails every resource it is applied to."""

    id = "HPCLZ-ORG-003"
    severity = Severity.ERROR
    title = "Tag name contains a character Azure refuses"
    fix = "Rename the tag without < > % & \\ ? /."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for key in ctx.config.metadata.tags:
            bad = sorted(set(key) & TAG_FORBIDDEN)
            if bad:
                yield self.finding(ctx, ("metadata", "tags", key), f"tag name {key!r} contains {' '.join(bad)}")


def planned_names(ctx: ConfigContext) -> Iterator[tuple[str, str, tuple[PathPart, ...]]]:
    """(kind, name, config path) for the resources render will name by convention (globals: STO-005)."""
    config = ctx.config
    names = ctx.names
    overrides = config.organization.resource_groups
    for area in Area:
        override = getattr(overrides, area)
        path: tuple[PathPart, ...] = ("organization", "resource_groups", area) if override else ("metadata", "name")
        yield "resource_group", names.resource_group(area, override), path
    yield "virtual_network", names.name("virtual_network"), ("metadata", "name")
    for role, subnet in ctx.subnets():
        if role != "bastion":
            path = ("network", "vnet", "subnets", role)
            yield "subnet", subnet.name or names.subnet(role), path
            if subnet.nsg:
                yield "network_security_group", names.network_security_group(role), path
    for who in ("scheduler", "compute"):
        if getattr(config.identity.managed_identities, who):
            yield "managed_identity", names.name("managed_identity", who), ("identity", "managed_identities", who)
    if config.monitoring.mode == "new":
        yield "log_analytics", names.name("log_analytics"), ("monitoring",)
        if config.monitoring.prometheus.mode == "new":
            path = ("monitoring", "prometheus")
            yield "monitor_workspace", names.name("monitor_workspace"), path
            yield "data_collection_endpoint", names.name("data_collection_endpoint", "prom"), path
            if config.monitoring.prometheus.grafana:
                yield "grafana", names.name("grafana"), path
    if config.storage.lustre.mode == "new":
        yield "lustre", names.name("lustre"), ("storage", "lustre")
    if config.storage.netapp.mode == "new":
        yield "netapp_account", names.name("netapp_account"), ("storage", "netapp")
        yield "netapp_pool", names.name("netapp_pool"), ("storage", "netapp")
    yield "virtual_machine", names.name("virtual_machine", "scheduler"), ("compute", "scheduler")
    yield "virtual_machine", names.cyclecloud_vm(), ("compute", "cyclecloud")
    for i in range(config.compute.login.count):
        yield "virtual_machine", names.name("virtual_machine", "login", str(i + 1)), ("compute", "login")
    for i, partition in enumerate(config.compute.partitions):
        yield "virtual_machine", names.name("virtual_machine", partition.name), ("compute", "partitions", i, "name")


class ResourceNamesValid(Rule[ConfigContext]):
    """Each Azure resource type has its own length and character limits; names built from the convention
    (abbreviation-name-part-environment-region) or overrides must meet them before anything is deployed."""

    id = "HPCLZ-ORG-004"
    severity = Severity.ERROR
    title = "Generated resource name breaks its type's naming rules"
    fix = "Shorten metadata.name, the partition or subnet name, or the override; or drop naming.include_region."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for kind, name, path in planned_names(ctx):
            for problem in NAME_RULES[kind].problems(name):
                yield self.finding(ctx, path, f"the {kind.replace('_', ' ')} name {name!r} {problem}")


class RegionKnown(Rule[ConfigContext]):
    """A misspelt region fails only at deployment, after a long wait (ARM: LocationNotAvailableForResourceType /
    InvalidLocation). The shipped catalog (src/hpclz/catalog/regions.json, dated, with its sources) lists the
    public-cloud regions from the Subscriptions - List Locations API and the region-pair page; sovereign clouds
    are not listed, so they are not checked."""

    id = "HPCLZ-ORG-005"
    severity = Severity.ERROR
    title = "Region is not in hpclz's region catalog"
    fix = (
        "Use the region's name as `az account list-locations -o table` prints it (e.g. westeurope); "
        "for a region newer than the catalog, suppress this rule."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.config.metadata.cloud != "public":
            return
        regions = load_regions()
        places: list[tuple[tuple[PathPart, ...], str]] = [(("metadata", "location"), ctx.config.metadata.location)]
        allowed = ctx.config.organization.policies.allowed_locations
        places += [(("organization", "policies", "allowed_locations", i), name) for i, name in enumerate(allowed)]
        for path, name in places:
            if regions.get(name) is None:
                close = regions.similar(name)
                hint = f", did you mean {' or '.join(close)}?" if close else f" (catalog of {regions.retrieved})"
                yield self.finding(ctx, path, f"unknown region '{name}'{hint}")


ORGANIZATION_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    RequiredTagsPresent,
    LocationAllowed,
    TagKeysValid,
    ResourceNamesValid,
    RegionKnown,
)
