"""What a kept data resource needs to stay reachable: its private endpoint and the endpoint's DNS registration.

hpclz's data accounts and Key Vault turn public network access off when they have a private endpoint (storage:
`publicNetworkAccess: Disabled` in templates/arm/storage; the vault always, templates/arm/identity). Then the endpoint
is the only way in: the built-in policy "Storage accounts should disable public network access" (b2982f36-99f2-4db5-
8eff-283140c09693, github.com/Azure/azure-policy built-in-policies/policyDefinitions/Storage/
StoragePublicNetworkAccess_AuditDeny.json) says such an account "can only be accessed from a private endpoint",
the setting "denies all logins that match IP or virtual network-based firewall rules"; Key Vault's publicNetworkAccess
(azure-rest-api-specs Microsoft.KeyVault VaultProperties, as the SDKs print it): "If set to 'disabled' all traffic
except private endpoint traffic and that that originates from trusted services will be blocked". Deleting the
endpoint on a plain destroy would leave kept data unreachable until the next deploy makes a new one.

So a private endpoint whose private-link connection targets a kept resource stays, and with it its private DNS zone
group, which keeps the endpoint's A record in the `privatelink.*` zone: Azure's public DNS answers the account's name
with a CNAME to its privatelink alias, and only a linked private zone holding that record turns it into the private
address; without it the name resolves to the public address, which refuses (learn.microsoft.com/azure/private-link/
private-endpoint-dns; learn.microsoft.com/azure/storage/common/storage-private-endpoints, DNS changes).
What these stand on follows by destroy's usual rules: the endpoint's subnet keeps the VNet ("used by"), the zone group keeps its zone ("used by"),
and the zone's link to the kept VNet stays (`destroy._needed_link`). `--include-data` keeps nothing, so all goes.
"""

from __future__ import annotations

from typing import Any

from hpclz.state.model import ResourceRecord

PRIVATE_ENDPOINT = "microsoft.network/privateendpoints"
ZONE_GROUP = "microsoft.network/privateendpoints/privatednszonegroups"


def _body(r: ResourceRecord) -> dict[str, Any]:
    """A record's resource properties: states record the whole rendered body; older ones only its properties."""
    inner = r.properties.get("properties", r.properties)
    return inner if isinstance(inner, dict) else {}


def link_targets(r: ResourceRecord) -> list[str]:
    """The resources an endpoint connects to (privateLinkServiceId, automatic or manual approval), as recorded:
    a full ID, or the rendered `[resourceId(...)]` expression."""
    body = _body(r)
    connections = [
        *(body.get("privateLinkServiceConnections") or []),
        *(body.get("manualPrivateLinkServiceConnections") or []),
    ]
    found = []
    for c in connections:
        target = (c.get("properties") or {}).get("privateLinkServiceId") if isinstance(c, dict) else None
        if isinstance(target, str) and target:
            found.append(target)
    return found


def _names(text: str, r: ResourceRecord) -> bool:
    lowered = text.lower()
    return r.id.lower() == lowered or (r.type.lower() in lowered and f"'{r.name.lower()}'" in lowered)


def _public_access_off(r: ResourceRecord) -> bool:
    return str(_body(r).get("publicNetworkAccess", "")).lower() == "disabled"


def needed_endpoint(r: ResourceRecord, kept: dict[str, str], by_id: dict[str, ResourceRecord]) -> str | None:
    """Why a private endpoint stays: it connects a kept resource (only `type` and `name` tell a target apart in a
    rendered expression, so the kept resource is found among the recorded ones)."""
    if r.type.lower() != PRIVATE_ENDPOINT:
        return None
    targets = link_targets(r)
    for key in kept:
        target = by_id.get(key)
        if target is not None and any(_names(t, target) for t in targets):
            why = f"reaches kept {target.name} privately"
            if _public_access_off(target):
                why += ": its public network access is disabled, so only private endpoints reach it"
            return why
    return None


def needed_zone_group(r: ResourceRecord, kept: dict[str, str], by_id: dict[str, ResourceRecord]) -> str | None:
    """Why an endpoint's private DNS zone group stays: its endpoint does."""
    if r.type.lower() != ZONE_GROUP:
        return None
    endpoint = r.id.lower().rsplit("/privatednszonegroups/", 1)[0]
    if endpoint not in kept:
        return None
    name = by_id[endpoint].name if endpoint in by_id else endpoint.rsplit("/", 1)[-1]
    return f"resolves kept {name} to its private address"


def reach(r: ResourceRecord, kept: dict[str, str], by_id: dict[str, ResourceRecord]) -> str | None:
    return needed_endpoint(r, kept, by_id) or needed_zone_group(r, kept, by_id)
