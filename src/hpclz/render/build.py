"""Render a validated config into the ordered DeploymentPlan that plan and deploy consume.

Organization (resource groups) deploys first at subscription scope; each design area then deploys into
its own resource group, after the deployments whose resources it references by deterministic ID.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hpclz.config.root import LandingZoneConfig
from hpclz.render import accounting, audit, backup, components, flowlogs, limits, monitoring, policy, portal, storage
from hpclz.render.arm import RG_TEMPLATE_SCHEMA, SUBSCRIPTION_TEMPLATE_SCHEMA
from hpclz.render.engine import render_json
from hpclz.render.model import Deployment, DeploymentPlan, Scope, canonical_json
from hpclz.render.zone import Zone

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Component:
    """One deployment of the plan: where it lands, what it needs first, and when it exists at all."""

    name: str
    area: str | None  # resource group area; None = subscription scope
    depends_on: tuple[str, ...]
    enabled: Callable[[Zone], bool] = lambda _zone: True
    context: Callable[[Zone], dict[str, Any]] = field(default=lambda _zone: {})
    secure: Callable[[Zone], dict[str, str]] = field(default=lambda _zone: {})


COMPONENTS: tuple[Component, ...] = (
    Component("organization", None, ()),
    Component("network", "network", ("organization",), context=components.network),
    Component(
        "identity",
        "management",
        ("organization", "network"),
        context=components.identity,
        secure=components.identity_secrets,
    ),
    Component("storage", "storage", ("organization", "network", "identity"), context=storage.storage),
    # The accounting database is data, so it lands in the storage group, which destroy keeps while data is in it;
    # before compute, whose slurmdbd connects to it (deployments depend only on earlier ones).
    Component(
        "accounting",
        "storage",
        ("organization", "network"),
        enabled=accounting.accounting_enabled,
        context=accounting.accounting,
        secure=accounting.accounting_secrets,
    ),
    # After identity: managed Prometheus grants the nodes' identity roles on its rule (reference() to its principal).
    Component(
        "monitoring",
        "monitoring",
        ("organization", "identity"),
        enabled=monitoring.monitoring_enabled,
        context=monitoring.monitoring,
    ),
    # After monitoring: the CycleCloud server's data collection rule association names the rule; after accounting
    # where there is one: the cluster's slurmdbd connects to that server as it starts.
    Component(
        "compute",
        "compute",
        ("organization", "network", "identity", "storage", "monitoring", "accounting"),
        context=components.compute,
    ),
    Component(
        "maintenance",
        "compute",
        ("compute",),
        enabled=components.maintenance_enabled,
        context=components.maintenance,
    ),
    Component(
        "alerts",
        "monitoring",
        ("monitoring", "compute", "storage"),
        enabled=monitoring.alerts_enabled,
        context=monitoring.alerts,
    ),
    # After everything it watches; late in the list so adding it leaves the other deployments' order alone.
    Component(
        "audit",
        None,
        ("organization", "identity", "storage", "monitoring"),
        enabled=audit.audit_enabled,
        context=audit.audit,
    ),
    # Last, so adding it leaves every other deployment's order alone. It uses nothing of the zone; after
    # organization only so that the first wave stays the resource groups alone.
    Component("defender", None, ("organization",), enabled=components.defender_enabled, context=components.defender),
    # After the VNet it watches and the workspace Traffic Analytics writes to; appended so the others keep their order.
    Component(
        "flowlogs",
        "monitoring",
        ("organization", "network", "monitoring"),
        enabled=flowlogs.flow_logs_enabled,
        context=flowlogs.flow_logs,
    ),
    # After the CycleCloud server it protects; appended so the others keep their order.
    Component(
        "backup", "management", ("organization", "compute"), enabled=backup.backup_enabled, context=backup.backup
    ),
    # The Open OnDemand VM joins the cluster the compute deployment starts; appended so the others keep their order.
    # After maintenance where there is one: the portal VM takes the same guest-patching window as the CycleCloud server.
    Component(
        "portal",
        "compute",
        ("organization", "network", "identity", "storage", "compute", "maintenance"),
        enabled=portal.portal_enabled,
        context=portal.portal,
    ),
)


def deployment_name(config: LandingZoneConfig, component: str) -> str:
    meta = config.metadata
    return f"hpclz-{meta.name}-{meta.environment.value}-{component}"


def config_hash(config: LandingZoneConfig) -> str:
    """Secrets dump masked, so the hash never depends on (or leaks) a secret value."""
    return hashlib.sha256(canonical_json(config.model_dump(mode="json")).encode()).hexdigest()


def build_plan(config: LandingZoneConfig) -> DeploymentPlan:
    zone = Zone(config)
    enabled = [c for c in COMPONENTS if c.enabled(zone)]
    present = {c.name for c in enabled}
    deployments = [_deployment(zone, c, present) for c in enabled]
    plan = DeploymentPlan(
        landing_zone=config.metadata.name,
        environment=config.metadata.environment.value,
        location=config.metadata.location,
        subscription_id=config.metadata.subscription_id,
        config_hash=config_hash(config),
        deployments=deployments,
    )
    log.info("rendered %d deployments: %s", len(deployments), ", ".join(d.name for d in deployments))
    # A plan Azure would refuse for its size never leaves render (hpclz.render.limits).
    limits.check(limits.measure(plan))
    return plan


def _deployment(zone: Zone, component: Component, present: set[str]) -> Deployment:
    scope = Scope.SUBSCRIPTION if component.area is None else Scope.RESOURCE_GROUP
    secure = component.secure(zone)
    context = component.context(zone)
    artifacts = context.pop("artifacts", {})
    parameters = context.pop("parameters", {})
    template = render_json(
        f"arm/{component.name}/main.json.j2",
        schema=SUBSCRIPTION_TEMPLATE_SCHEMA if scope is Scope.SUBSCRIPTION else RG_TEMPLATE_SCHEMA,
        metadata={"hpclz": {"zone": zone.config.metadata.name, "component": component.name}},
        secure_parameters=sorted(secure.items()),
        policies=policy.assignments(zone, component.name),
        **zone.template_globals(),
        **context,
    )
    return Deployment(
        name=deployment_name(zone.config, component.name),
        component=component.name,
        scope=scope,
        resource_group=zone.rg[component.area] if component.area else None,
        location=zone.location,
        template=template,
        parameters=parameters,
        secure_parameters=secure,
        depends_on=[deployment_name(zone.config, d) for d in component.depends_on if d in present],
        artifacts=artifacts,
    )
