"""Which NSG rule decides a TCP flow, as Azure evaluates an NSG: its rules and the default rules, by priority, the
first match decides (learn.microsoft.com/azure/virtual-network/network-security-group-how-it-works). Shared by the
live rules (NSGs read from Azure) and the config rules (the NSGs hpclz renders).
"""

from __future__ import annotations

from ipaddress import ip_network
from typing import Any

from hpclz.rules.exposure import port_spans

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


def _default(name: str, priority: int, direction: str, access: str, source: str, destination: str) -> dict[str, Any]:
    props = {
        "priority": priority,
        "direction": direction,
        "access": access,
        "protocol": "*",
        "sourceAddressPrefix": source,
        "destinationAddressPrefix": destination,
        "destinationPortRange": "*",
    }
    return {"name": name, "properties": props}


# Every NSG's default rules, which an NSG hpclz renders does not list: "Azure creates the following default rules
# in each network security group that you create" (learn.microsoft.com/azure/virtual-network/
# network-security-groups-overview, Default security rules).
DEFAULT_RULES: tuple[dict[str, Any], ...] = (
    _default("AllowVNetInBound", 65000, "Inbound", "Allow", "VirtualNetwork", "VirtualNetwork"),
    _default("AllowAzureLoadBalancerInBound", 65001, "Inbound", "Allow", "AzureLoadBalancer", "*"),
    _default("DenyAllInBound", 65500, "Inbound", "Deny", "*", "*"),
    _default("AllowVnetOutBound", 65000, "Outbound", "Allow", "VirtualNetwork", "VirtualNetwork"),
    _default("AllowInternetOutBound", 65001, "Outbound", "Allow", "*", "Internet"),
    _default("DenyAllOutBound", 65500, "Outbound", "Deny", "*", "*"),
)


def _edges(rules: list[dict[str, Any]], low: int, high: int) -> list[int]:
    """The ports of low..high where the deciding rule can change: low, and where any rule's port span starts or
    ends. Between two edges every rule matches all ports or none, so checking the edges checks the range."""
    edges = {low}
    for rule in rules:
        specs = _listed(rule.get("properties") or {}, "destinationPortRange", "destinationPortRanges")
        for start, end in (span for spec in specs for span in port_spans(spec)):
            edges.update(p for p in (start, end + 1) if low <= p <= high)
    return sorted(edges)


def refusal(
    rules: list[dict[str, Any]], direction: str, source: str, destination: str, ports: tuple[int, int]
) -> tuple[int, dict[str, Any]] | None:
    """The first port of the range whose TCP flow these rules, with Azure's defaults after them, deny, and the rule
    that denies it; None when every port of the range is let through."""
    nsg = {"properties": {"securityRules": rules, "defaultSecurityRules": list(DEFAULT_RULES)}}
    for port in _edges(rules, *ports):
        rule = first_match(nsg, direction, source, destination, port)
        if rule is None or (rule.get("properties") or {}).get("access") != "Allow":
            return port, rule or {"name": "(none)", "properties": {}}
    return None
