"""Resources an `existing` block names, in the shapes ARM returns them: the azure-rest-api-specs examples in
tests/fixtures/arm/existing/, moved into the stand-in's subscription and the test's resource groups."""

from __future__ import annotations

import json
from ipaddress import ip_network
from typing import Any

from ruamel.yaml import YAML

from hpclz.config import load_config_text
from hpclz.config.loader import LoadedConfig
from hpclz.naming import NameBuilder
from hpclz.render.zone import BASTION_SUBNET
from tests.conftest import REPO

SUB = "00000000-0000-0000-0000-00000000c0de"
NET = f"/subscriptions/{SUB}/resourceGroups/rg-spoke-net/providers/Microsoft.Network"
VNET_ID = f"{NET}/virtualNetworks/vnet-spoke"
HUB_ID = f"/subscriptions/{SUB}/resourceGroups/rg-hub-weu/providers/Microsoft.Network/virtualNetworks/vnet-hub-weu"
FIXTURES = REPO / "tests" / "fixtures" / "arm" / "existing"


def spec(name: str, **moves: str) -> dict[str, Any]:
    """A fixture's body without its `_source`, each `old=new` text moved (IDs into this test's world)."""
    text = (FIXTURES / f"{name}_specexample.json").read_text(encoding="utf-8")
    for old, new in moves.items():
        text = text.replace(old, new)
    body = json.loads(text)
    body.pop("_source")
    return dict(body)


def _read_preset(name: str) -> dict[str, Any]:
    return dict(YAML(typ="safe").load((REPO / "configs" / f"{name}.yaml").read_text(encoding="utf-8")))


def _changed(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    for dotted, value in changes.items():
        node = data
        *parents, last = dotted.split(".")
        for part in parents:
            node = node[part]
        node[last] = value
    return data


def preset_data(name: str, **changes: Any) -> str:
    """A preset as JSON text with `changes` (dotted paths) applied; its VNet stays as the preset has it."""
    return json.dumps(_changed(_read_preset(name), changes))


def preset(name: str, **changes: Any) -> dict[str, Any]:
    """A preset whose VNet is an existing one (VNET_ID) with the preset's address space and subnets."""
    data = _read_preset(name)
    vnet = data["network"]["vnet"]
    data["network"]["vnet"] = {
        "mode": "existing",
        "resource_id": VNET_ID,
        **{k: vnet[k] for k in ("address_space", "subnets")},
    }
    return _changed(data, changes)


def loaded(data: dict[str, Any]) -> LoadedConfig:
    return load_config_text(json.dumps(data), "existing.yaml")


def subnet_names(config: LoadedConfig) -> dict[str, tuple[str, str]]:
    """role -> (subnet name as render names it, CIDR)."""
    vnet = config.config.network.vnet
    names = NameBuilder(config.config)
    out = {}
    for role, subnet in vnet.subnets:
        if subnet is not None:
            name = subnet.name or (BASTION_SUBNET if role == "bastion" else names.subnet(role))
            out[role] = (name, str(subnet.cidr))
    return out


def vnet_body(
    config: LoadedConfig, nsgs: dict[str, str] | None = None, peerings: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The existing VNet as VirtualNetworks - Get returns it, holding the config's subnets; `nsgs` attaches an NSG
    ID to a role's subnet."""
    subnets = []
    for role, (name, cidr) in subnet_names(config).items():
        props: dict[str, Any] = {"addressPrefix": cidr, "delegations": [], "provisioningState": "Succeeded"}
        delegation = getattr(config.config.network.vnet.subnets, role).delegation
        if delegation:
            props["delegations"] = [{"name": "d", "properties": {"serviceName": delegation}}]
        if nsgs and role in nsgs:
            props["networkSecurityGroup"] = {"id": nsgs[role]}
        subnets.append({"name": name, "id": f"{VNET_ID}/subnets/{name}", "properties": props})
    space = [str(ip_network(s)) for s in config.config.network.vnet.address_space]
    return {
        "name": "vnet-spoke",
        "id": VNET_ID,
        "type": "Microsoft.Network/virtualNetworks",
        "location": "westeurope",
        "properties": {
            "addressSpace": {"addressPrefixes": space},
            "subnets": subnets,
            "virtualNetworkPeerings": peerings or [],
            "provisioningState": "Succeeded",
        },
    }
