"""Which NSG rule decides a TCP flow, as Azure evaluates an NSG: its rules and the default rules, by priority, the
first match decides (learn.microsoft.com/azure/virtual-network/network-security-group-how-it-works). Shared by the
live rules (NSGs read from Azure) and the config rules (the NSGs hpclz renders).
"""

from __future__ import annotations

from ipaddress import ip_network
from typing import Any

# Address prefixes that cover any address inside the VNet; other service tags (Internet, AzureCloud...) do not.
WITHIN_VNET = {"*", "any", "virtualnetwork"}


def _listed(props: dict[str, Any], single: str, plural: str) -> list[str]:
    """A rule's addresses or ports. A rule on application security groups has no address prefixes; whom they
    hold is not read, so such a rule matches nothing here rather than everything."""
    values = [str(v) for v in props.get(plural) or []]
    return values or ([str(props[single])] if props.get(single) else [])


def _address_matches(prefix: str, cidr: str) -> bool:
    if prefix.lower() in WITHIN_VNET:
        return True
    try:
        return ip_network(prefix, strict=False).overlaps(ip_network(cidr, strict=False))
    except ValueError:
        return False  # a service tag for something outside the VNet


def _port_matches(spec: str, port: int) -> bool:
    if spec.strip() == "*":
        return True
    low, _, high = spec.strip().partition("-")
    try:
        return int(low) <= port <= int(high or low)
    except ValueError:
        return False


def _matches(props: dict[str, Any], direction: str, source: str, destination: str, port: int) -> bool:
    return (
        props.get("direction") == direction
        and str(props.get("protocol", "*")).lower() in ("*", "tcp")
        and any(_address_matches(p, source) for p in _listed(props, "sourceAddressPrefix", "sourceAddressPrefixes"))
        and any(
            _address_matches(p, destination)
            for p in _listed(props, "destinationAddressPrefix", "destinationAddressPrefixes")
        )
        and any(_port_matches(s, port) for s in _listed(props, "destinationPortRange", "destinationPortRanges"))
    )


def first_match(nsg: dict[str, Any], direction: str, source: str, destination: str, port: int) -> dict[str, Any] | None:
    """The rule that decides a TCP flow, or None when none matches (then the defaults, VNet to VNet, allow it)."""
    props = nsg.get("properties") or {}
    rules: list[dict[str, Any]] = [*(props.get("securityRules") or []), *(props.get("defaultSecurityRules") or [])]
    rules.sort(key=lambda r: int((r.get("properties") or {}).get("priority", 65500)))
    return next((r for r in rules if _matches(r.get("properties") or {}, direction, source, destination, port)), None)
