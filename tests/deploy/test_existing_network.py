"""`network.vnet.mode: existing` is read through azure-mgmt-network before anything is deployed (issue 13, item 4).

The stand-in holds the VNet in the shape ARM returns it: azure-rest-api-specs, Microsoft.Network
examples/VirtualNetworkGetWithSubnetDelegation.json (properties.addressSpace.addressPrefixes,
subnets[].properties.addressPrefix, delegations[].properties.serviceName).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ruamel.yaml import YAML

from hpclz.azure.arm import Arm
from hpclz.azure.clients import AzureClients
from hpclz.config import load_config_text
from hpclz.config.loader import LoadedConfig
from hpclz.deploy.preflight import gather
from hpclz.findings import Severity
from hpclz.render.build import build_plan
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.network import ExistingVnetMatches
from tests.conftest import REPO
from tests.support.arm_standin import ArmStandIn

SUB = "00000000-0000-0000-0000-00000000c0de"
VNET_ID = f"/subscriptions/{SUB}/resourceGroups/rg-hub-net/providers/Microsoft.Network/virtualNetworks/vnet-spoke"
SUBNETS = {
    "snet-cae-admin-test-weu": ("10.80.0.0/24", None),
    "AzureBastionSubnet": ("10.80.1.0/26", None),
    "snet-cae-pe-test-weu": ("10.80.1.64/26", None),
    "snet-cae-netapp-test-weu": ("10.80.2.0/26", "Microsoft.NetApp/volumes"),
    "snet-cae-compute-test-weu": ("10.80.8.0/22", None),
}


def _loaded() -> LoadedConfig:
    data = YAML(typ="safe").load((REPO / "configs" / "manufacturing.yaml").read_text(encoding="utf-8"))
    vnet = data["network"]["vnet"]
    data["network"]["vnet"] = {
        "mode": "existing",
        "resource_id": VNET_ID,
        **{k: vnet[k] for k in ("address_space", "subnets")},
    }
    return load_config_text(json.dumps(data), "existing.yaml")


def _vnet(
    subnets: dict[str, tuple[str, str | None]] = SUBNETS, prefixes: tuple[str, ...] = ("10.80.0.0/16",)
) -> dict[str, Any]:
    def subnet(name: str, prefix: str, service: str | None) -> dict[str, Any]:
        delegations = [{"name": "netapp", "properties": {"serviceName": service, "actions": []}}] if service else []
        return {
            "name": name,
            "id": f"{VNET_ID}/subnets/{name}",
            "properties": {"addressPrefix": prefix, "delegations": delegations, "provisioningState": "Succeeded"},
        }

    return {
        "name": "vnet-spoke",
        "id": VNET_ID,
        "type": "Microsoft.Network/virtualNetworks",
        "location": "westeurope",
        "properties": {
            "addressSpace": {"addressPrefixes": list(prefixes)},
            "provisioningState": "Succeeded",
            "subnets": [subnet(n, p, s) for n, (p, s) in subnets.items()],
            "virtualNetworkPeerings": [],
        },
    }


def _messages(vnet: dict[str, Any] | None) -> list[str]:
    ctx = LiveContext(loaded=_loaded(), location="westeurope", existing_vnet=vnet)
    return [f.message for f in ExistingVnetMatches().check(ctx)]


def test_a_vnet_with_the_declared_subnets_passes() -> None:
    """Subnets without a name in the config are looked up by the naming convention (snet-<name>-<role>-...)."""
    assert _messages(_vnet()) == []


@pytest.mark.parametrize(
    ("vnet", "expected"),
    [
        ({}, f"{VNET_ID} does not exist"),
        (_vnet(prefixes=("10.81.0.0/16",)), "10.80.0.0/16 is not an address prefix of the VNet (it has 10.81.0.0/16)"),
        (
            _vnet({k: v for k, v in SUBNETS.items() if "compute" not in k}),
            "subnet snet-cae-compute-test-weu is not in the VNet",
        ),
        (
            _vnet({**SUBNETS, "snet-cae-admin-test-weu": ("10.80.0.0/25", None)}),
            "subnet snet-cae-admin-test-weu is 10.80.0.0/25, not 10.80.0.0/24",
        ),
        (
            _vnet({**SUBNETS, "snet-cae-netapp-test-weu": ("10.80.2.0/26", None)}),
            "subnet snet-cae-netapp-test-weu is not delegated to Microsoft.NetApp/volumes",
        ),
        (
            # A delegated subnet holds only its service (learn.microsoft.com/azure/virtual-network/
            # subnet-delegation-overview): compute nodes could not be placed in it.
            _vnet({**SUBNETS, "snet-cae-compute-test-weu": ("10.80.8.0/22", "Microsoft.NetApp/volumes")}),
            "subnet snet-cae-compute-test-weu is delegated to Microsoft.NetApp/volumes, so the compute resources "
            "hpclz places there cannot use it",
        ),
    ],
)
def test_each_mismatch_is_named(vnet: dict[str, Any], expected: str) -> None:
    assert _messages(vnet) == [expected]


def test_preflight_reads_the_vnet_through_azure_mgmt_network(arm: ArmStandIn) -> None:
    loaded = _loaded()
    plan = build_plan(loaded.config)
    live = Arm(AzureClients(arm.subscription_id))
    assert gather(live, loaded, plan, {}).existing_vnet == {}  # not there yet: the rule reports it missing
    broken = _vnet({k: v for k, v in SUBNETS.items() if "compute" not in k})
    arm.world.resources[VNET_ID.lower()] = broken
    read = gather(live, loaded, plan, {}).existing_vnet
    assert read is not None and [s["name"] for s in read["properties"]["subnets"]] == [
        s["name"] for s in broken["properties"]["subnets"]
    ]
    assert any(
        "/providers/Microsoft.Network/virtualNetworks/vnet-spoke" in r.path for r in arm.log if r.method == "GET"
    )


HUB_ID = f"/subscriptions/{SUB}/resourceGroups/rg-hub-weu/providers/Microsoft.Network/virtualNetworks/vnet-hub-weu"


def _finance() -> LoadedConfig:
    data = YAML(typ="safe").load((REPO / "configs" / "finance.yaml").read_text(encoding="utf-8"))
    data["network"]["hub_peering"]["remote_vnet_id"] = HUB_ID
    return load_config_text(json.dumps(data), "finance-hub.yaml")


def _hub(gateway: bool) -> dict[str, Any]:
    """A hub VNet as VirtualNetworks - Get returns it; with a gateway, GatewaySubnet's ipConfigurations name it."""
    configs = [
        {
            "id": f"{HUB_ID.rsplit('/providers/', 1)[0]}/providers/Microsoft.Network/virtualNetworkGateways/vgw-hub/ipConfigurations/default"
        }
    ]
    gateway_subnet = {"addressPrefix": "10.0.255.0/27", "ipConfigurations": configs if gateway else []}
    return {
        "name": "vnet-hub-weu",
        "id": HUB_ID,
        "type": "Microsoft.Network/virtualNetworks",
        "location": "westeurope",
        "properties": {
            "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": [
                {"name": "GatewaySubnet", "id": f"{HUB_ID}/subnets/GatewaySubnet", "properties": gateway_subnet},
                {
                    "name": "AzureFirewallSubnet",
                    "id": f"{HUB_ID}/subnets/AzureFirewallSubnet",
                    "properties": {"addressPrefix": "10.0.1.0/26"},
                },
            ],
            "virtualNetworkPeerings": [],
        },
    }


def test_hub_gateway_is_read_not_only_declared(arm: ArmStandIn) -> None:
    """Finding 5 of issue 13: use_remote_gateways with no gateway in the hub."""
    from hpclz.rules.live.network import HubHasNoGateway

    loaded = _finance()
    plan = build_plan(loaded.config)
    live = Arm(AzureClients(arm.subscription_id))
    arm.world.resources[HUB_ID.lower()] = _hub(gateway=False)
    ctx = gather(live, loaded, plan, {})
    errors = [f.message for f in HubHasNoGateway().check(ctx) if f.severity is Severity.ERROR]
    assert errors == ["the hub VNet's GatewaySubnet holds no virtual network gateway (ARM: RemoteVnetHasNoGateways)"]
    arm.world.resources[HUB_ID.lower()] = _hub(gateway=True)
    assert [f for f in HubHasNoGateway().check(gather(live, loaded, plan, {})) if f.severity is Severity.ERROR] == []
    del arm.world.resources[HUB_ID.lower()]
    [missing] = HubHasNoGateway().check(gather(live, loaded, plan, {}))
    assert "does not exist" in missing.message
