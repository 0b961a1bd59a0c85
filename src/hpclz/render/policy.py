"""organization.policies as Azure Policy assignments of built-in definitions, one set per landing-zone group.

Each area's main template assigns them at its own resource group, so the landing zone's policies reach its
groups and nothing else in the subscription. Every definition ID below was read from Azure/azure-policy
(built-in-policies/policyDefinitions/<file>); built-in IDs are the same in every tenant.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from hpclz.render import flowlogs
from hpclz.render.arm import expr, resource_id
from hpclz.render.zone import Zone

DEFINITIONS = "/providers/Microsoft.Authorization/policyDefinitions/"
ALLOWED_LOCATIONS = "e56962a6-4747-49cd-b67b-bf8b01975c4c"  # General/AllowedLocations_Deny.json
REQUIRE_TAG = "871b6d14-10aa-478d-b590-94f262ecfa99"  # Tags/RequireTag_Deny.json ("Require a tag on resources")
# Storage/StoragePublicNetworkAccess_AuditDeny.json: "Storage accounts should disable public network access".
STORAGE_NO_PUBLIC_NETWORK = "b2982f36-99f2-4db5-8eff-283140c09693"
# Storage/ASC_Storage_DisallowPublicBlobAccess_Audit.json: "Storage account public access should be disallowed".
STORAGE_NO_PUBLIC_BLOB = "4fa4b6c0-31ca-4c0d-b10d-24b96f62a751"
# The component whose template deploys into each area's group first; that template carries the assignments.
AREA_OWNERS = {
    "network": "network",
    "management": "identity",
    "storage": "storage",
    "monitoring": "monitoring",
    "compute": "compute",
}


@dataclass(frozen=True)
class Assignment:
    name: str
    path: str
    display_name: str
    definition: str
    parameters: dict[str, Any]
    message: str
    # Resource IDs (ARM expressions) the assignment leaves out: "If a child resource container or child resource
    # shouldn't have the definition applied, each can be excluded from evaluation by setting notScopes"
    # (learn.microsoft.com/azure/governance/policy/concepts/assignment-structure, "Excluded scopes").
    not_scopes: tuple[str, ...] = ()

    @property
    def definition_id(self) -> str:
        return DEFINITIONS + self.definition


def assignments(zone: Zone, component: str) -> list[Assignment]:
    """The policy assignments the component's template makes at its group: none unless it owns the group."""
    if component not in AREA_OWNERS.values():
        return []
    policies = zone.config.organization.policies
    out: list[Assignment] = []
    if policies.allowed_locations:
        out.append(
            Assignment(
                "hpclz-allowed-locations",
                "organization.policies.allowed_locations",
                "hpclz: allowed locations",
                ALLOWED_LOCATIONS,
                {"listOfAllowedLocations": {"value": list(policies.allowed_locations)}},
                f"Resources of landing zone {zone.config.metadata.name} must be in {', '.join(policies.allowed_locations)}.",
            )
        )
    if policies.require_tags:
        for tag in zone.config.organization.required_tags:
            out.append(
                Assignment(
                    _name("hpclz-require-tag-", tag),
                    "organization.policies.require_tags",
                    f"hpclz: require tag {tag}",
                    REQUIRE_TAG,
                    {"tagName": {"value": tag}},
                    f"Resources of landing zone {zone.config.metadata.name} must carry the tag {tag}.",
                )
            )
    if policies.regulated_baseline:
        out.extend(_regulated(zone, component))
    return out


def _flow_log_exclusion(zone: Zone, component: str) -> tuple[str, ...]:
    """The VNet flow logs' own account, left out of "no public network" in the group that holds it. Network Watcher
    writes flow records into it as a trusted Microsoft service, and Azure documents that exception for an account whose
    public network access is "Enabled from selected virtual networks and IP addresses" with "Allow trusted Microsoft
    services" ticked (learn.microsoft.com/azure/network-watcher/network-watcher-nsg-flow-logging-overview, FAQ "How do
    I use NSG flow logs with a Storage account behind a firewall?"); with public network access Disabled only private
    endpoints reach an account, and Network Watcher does not write through one. The account denies every network by
    default and allows no IP or subnet (templates/arm/flowlogs), so the exclusion opens nothing but that trusted path."""
    if component != AREA_OWNERS["monitoring"] or not flowlogs.flow_logs_enabled(zone):
        return ()
    return (expr(resource_id("Microsoft.Storage/storageAccounts", flowlogs.flow_log_account(zone))),)


def _regulated(zone: Zone, component: str) -> list[Assignment]:
    deny = {"effect": {"value": "Deny"}}
    where = f"landing zone {zone.config.metadata.name}"
    return [
        Assignment(
            "hpclz-storage-no-public-network",
            "organization.policies.regulated_baseline",
            "hpclz: storage accounts disable public network access",
            STORAGE_NO_PUBLIC_NETWORK,
            deny,
            f"Storage accounts of {where} are reached through private endpoints only.",
            not_scopes=_flow_log_exclusion(zone, component),
        ),
        Assignment(
            "hpclz-storage-no-public-blob",
            "organization.policies.regulated_baseline",
            "hpclz: storage account public access disallowed",
            STORAGE_NO_PUBLIC_BLOB,
            deny,
            f"Storage accounts of {where} never allow anonymous blob access.",
        ),
    ]


def _name(prefix: str, tag: str) -> str:
    """Assignment names outside a management group may be 64 characters; a long tag keeps a short hash."""
    name = prefix + "".join(c if c.isalnum() or c in "-_." else "-" for c in tag)
    if len(name) <= 64:
        return name
    return name[:55] + "-" + hashlib.sha256(tag.encode()).hexdigest()[:8]
