"""The egress allow-list as an Azure Firewall Policy rule collection group, for the hub team to deploy.

Rendered only for a plan whose subnets send 0.0.0.0/0 to a virtual appliance (network.hub_peering.firewall_private_ip
without a NAT gateway). hpclz never deploys it: the policy is the hub team's, shared with every spoke (docs/egress.md);
they deploy it into the policy's resource group with `az deployment group create ... -p firewallPolicyName=<name>`.

Rows with an Azure service tag become network rules to the tag (Azure Firewall network rules take service tags as
destinations: learn.microsoft.com/azure/virtual-network/service-tags-overview, the "Azure Firewall" column); the rest
application rules for their FQDN, protocol and port (learn.microsoft.com/azure/firewall-manager/rule-processing: "If
no network rule matches, and if the packet protocol is HTTP/HTTPS, application rules then evaluate the packet").
Shape: Microsoft.Network/firewallPolicies/ruleCollectionGroups@2024-05-01, FirewallPolicyFilterRuleCollection with
NetworkRule and ApplicationRule (src/hpclz/armschemas, Microsoft.Network.NRP.json); checked by tests/render/
test_egress.py against that schema and by checkov.
"""

from __future__ import annotations

import re
from typing import Any

from hpclz.arm.walk import iter_resources
from hpclz.render.arm import RG_TEMPLATE_SCHEMA
from hpclz.render.egress import Allowed, allow_list, through_hub
from hpclz.render.model import DeploymentPlan

HUB_TEMPLATE = "egress-hub.template.json"
API_VERSION = "2024-05-01"
RULE_GROUP_TYPE = "Microsoft.Network/firewallPolicies/ruleCollectionGroups"


def routes_to_appliance(plan: DeploymentPlan) -> bool:
    """A route table of the plan sends 0.0.0.0/0 to a virtual appliance (the hub firewall)."""
    for deployment in plan.deployments:
        for found in iter_resources(deployment.template.get("resources")):
            if found.type.lower() != "microsoft.network/routetables":
                continue
            for route in found.resource.get("properties", {}).get("routes", []):
                props = route.get("properties", {})
                if props.get("addressPrefix") == "0.0.0.0/0" and props.get("nextHopType") == "VirtualAppliance":
                    return True
    return False


def vnet_prefixes(plan: DeploymentPlan) -> list[str]:
    prefixes: list[str] = []
    for deployment in plan.deployments:
        for found in iter_resources(deployment.template.get("resources")):
            if found.type.lower() == "microsoft.network/virtualnetworks":
                prefixes += found.resource.get("properties", {}).get("addressSpace", {}).get("addressPrefixes", [])
    return prefixes


def _rule_name(row: Allowed) -> str:
    """Rule names within a collection are unique: role and host, in the characters Azure takes."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", f"{row.destination.role}-{row.destination.host}").strip("-.")


def _network_rule(tag: str, rows: list[Allowed]) -> dict[str, Any]:
    ports = sorted({str(r.destination.port) for r in rows})
    roles = "-".join(sorted({r.destination.role for r in rows}))
    return {
        "ruleType": "NetworkRule",
        "name": f"{roles}-{tag}",
        "description": "; ".join(sorted({r.destination.reason for r in rows})),
        "ipProtocols": ["TCP"],
        "sourceAddresses": "[parameters('sourceAddresses')]",
        "destinationAddresses": [tag],
        "destinationPorts": ports,
    }


def _application_rule(row: Allowed) -> dict[str, Any]:
    d = row.destination
    return {
        "ruleType": "ApplicationRule",
        "name": _rule_name(row),
        "description": d.reason,
        "protocols": [{"protocolType": d.protocol, "port": d.port}],
        "sourceAddresses": "[parameters('sourceAddresses')]",
        "targetFqdns": [d.host],
    }


def _collections(rows: list[Allowed], zone: str) -> list[dict[str, Any]]:
    by_tag: dict[str, list[Allowed]] = {}
    for row in rows:
        if row.destination.service_tag is not None:
            by_tag.setdefault(row.destination.service_tag, []).append(row)
    network = [_network_rule(tag, tagged) for tag, tagged in sorted(by_tag.items())]
    seen: set[str] = set()
    application = []
    for row in rows:
        if row.destination.service_tag is None and _rule_name(row) not in seen:
            seen.add(_rule_name(row))
            application.append(_application_rule(row))
    collections = []
    if network:
        collections.append(_collection(f"{zone}-network", 100, network))
    if application:
        collections.append(_collection(f"{zone}-application", 200, application))
    return collections


def _collection(name: str, priority: int, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ruleCollectionType": "FirewallPolicyFilterRuleCollection",
        "name": name,
        "priority": priority,
        "action": {"type": "Allow"},
        "rules": rules,
    }


def hub_template(plan: DeploymentPlan, rows: list[Allowed] | None = None) -> dict[str, Any] | None:
    """The rule collection group that lets this zone's egress through the hub's firewall; None when the plan does
    not route egress to one."""
    if not routes_to_appliance(plan):
        return None
    zone = f"hpclz-{plan.landing_zone}-{plan.environment}"
    rows = through_hub(allow_list(plan) if rows is None else rows)
    return {
        "$schema": RG_TEMPLATE_SCHEMA,
        "contentVersion": "1.0.0.0",
        "parameters": {
            "firewallPolicyName": {
                "type": "string",
                "metadata": {"description": "The hub's Azure Firewall Policy, in the resource group deployed to."},
            },
            "ruleCollectionGroupName": {"type": "string", "defaultValue": zone},
            "priority": {"type": "int", "defaultValue": 2000, "minValue": 100, "maxValue": 65000},
            "sourceAddresses": {"type": "array", "defaultValue": vnet_prefixes(plan)},
        },
        "resources": [
            {
                "type": RULE_GROUP_TYPE,
                "apiVersion": API_VERSION,
                "name": "[format('{0}/{1}', parameters('firewallPolicyName'), parameters('ruleCollectionGroupName'))]",
                "properties": {"priority": "[parameters('priority')]", "ruleCollections": _collections(rows, zone)},
            }
        ],
    }
