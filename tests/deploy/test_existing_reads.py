"""Preflight reads what `existing` blocks name (issue 13 item 4): NSGs and peerings of an existing VNet, the hub's
gateway transit (finding 5), an existing Managed Lustre and an existing Key Vault. Every Azure answer is an
azure-rest-api-specs example (tests/fixtures/arm/existing/, each file's `_source`) served by the ARM stand-in and
read through hpclz's adapter on the real SDK clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from hpclz.azure.arm import Arm
from hpclz.azure.clients import AzureClients
from hpclz.config import load_config_text
from hpclz.config.loader import LoadedConfig
from hpclz.deploy.preflight import gather
from hpclz.findings import Severity
from hpclz.render.build import build_plan
from hpclz.rules.base import Rule
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.existing import ExistingLustreMatches, ExistingVaultUnfit
from hpclz.rules.live.netapp import ExistingNetAppVolumes
from hpclz.rules.live.network import NO_TRANSIT, HubHasNoGateway, SpokePeeringNotConnected
from hpclz.rules.live.nsg import ExistingSubnetWithoutNsg, NsgBlocksLustre
from tests.support.arm_standin import ArmStandIn
from tests.support.existing_resources import (
    HUB_ID,
    SUB,
    VNET_ID,
    loaded,
    preset,
    preset_data,
    spec,
    subnet_names,
    vnet_body,
)

SPOKE_RG = f"/subscriptions/{SUB}/resourceGroups/rg-spoke-net"
HUB_RG = HUB_ID.split("/providers/")[0]
NSG_ID = f"{SPOKE_RG}/providers/Microsoft.Network/networkSecurityGroups/testnsg"


def read(arm: ArmStandIn, config: LoadedConfig, **resources: dict[str, Any]) -> LiveContext:
    """Preflight's gather on the stand-in holding `resources` (by ID), as Azure would hold them."""
    for body in resources.values():
        arm.world.resources[str(body["id"]).lower()] = body
    return gather(Arm(AzureClients(arm.subscription_id)), config, build_plan(config.config), {})


def messages(rule: type[Rule[Any]], ctx: LiveContext) -> list[str]:
    return [f.message for f in rule().check(ctx)]


def nsg(*extra_rules: dict[str, Any]) -> dict[str, Any]:
    """NetworkSecurityGroupGet.json in the spoke's network group, with `extra_rules` added to its own."""
    body = spec("nsg_get", **{"/subscriptions/subid/resourceGroups/rg1": SPOKE_RG})
    body["properties"]["securityRules"].extend(extra_rules)
    return body


def rule(name: str, priority: int, direction: str, access: str, **fields: Any) -> dict[str, Any]:
    props = {"protocol": "*", "sourcePortRange": "*", "destinationPortRange": "*", "sourceAddressPrefix": "*"}
    props |= {"destinationAddressPrefix": "*", "access": access, "priority": priority, "direction": direction}
    props |= fields
    return {"name": name, "properties": {k: v for k, v in props.items() if v is not None}}


# --- NSGs on an existing VNet's subnets -------------------------------------------------------------------------


def test_subnets_without_an_nsg_are_named_and_an_attached_one_is_read(arm: ArmStandIn) -> None:
    config = loaded(preset("ai-training"))
    names = subnet_names(config)
    ctx = read(arm, config, vnet=vnet_body(config))
    assert messages(ExistingSubnetWithoutNsg, ctx) == [
        f"subnet {name} has no network security group" for name, _ in names.values()
    ]
    ctx = read(arm, config, vnet=vnet_body(config, nsgs=dict.fromkeys(names, NSG_ID)), nsg=nsg())
    assert messages(ExistingSubnetWithoutNsg, ctx) == []
    assert ctx.nsgs[NSG_ID.lower()]["name"] == "testnsg"
    assert any(r.method == "GET" and "/networkSecurityGroups/testnsg" in r.path for r in arm.log)


def _lustre_ctx(lustre_nsg: dict[str, Any]) -> LiveContext:
    config = loaded(preset("ai-training"))
    lustre_id = f"{SPOKE_RG}/providers/Microsoft.Network/networkSecurityGroups/lustre"
    nsgs = {role: NSG_ID for role in subnet_names(config)} | {"lustre": lustre_id}
    return LiveContext(
        loaded=config,
        location="eastus2",
        existing_vnet=vnet_body(config, nsgs=nsgs),
        nsgs={NSG_ID.lower(): nsg(), lustre_id.lower(): lustre_nsg},
    )


def test_the_spec_nsg_lets_lustre_through_on_its_default_rules() -> None:
    """AllowVnetInBound/AllowVnetOutBound (65000) carry 988 and 1019-1023, as the AMLFS prerequisites say."""
    assert messages(NsgBlocksLustre, _lustre_ctx(nsg())) == []


def test_a_zero_trust_nsg_without_the_lustre_rule_blocks_the_clients() -> None:
    """The AMLFS zero-trust page's inbound "120 Deny all" (configure-network-security-group.md) without its rule 111
    stops both client subnets at port 988; adding rule 111 for the client subnets lets them through."""
    deny_all = rule("deny-all-inbound", 120, "Inbound", "Deny")
    ctx = _lustre_ctx(nsg(deny_all))
    admin, compute, lustre = (subnet_names(ctx.loaded)[r][1] for r in ("admin", "compute", "lustre"))
    assert messages(NsgBlocksLustre, ctx) == [
        f"NSG testnsg rule deny-all-inbound (priority 120) denies inbound TCP 988 from {client} to {lustre}; "
        "Lustre needs 988 and 1019-1023"
        for client in (admin, compute)
    ]
    lustre_clients = rule(
        "lustre-clients",
        111,
        "Inbound",
        "Allow",
        protocol="Tcp",
        destinationPortRange=None,
        destinationPortRanges=["988", "1019-1023"],
        sourceAddressPrefix=None,
        sourceAddressPrefixes=[admin, compute],
        destinationAddressPrefix=lustre,
    )
    assert messages(NsgBlocksLustre, _lustre_ctx(nsg(lustre_clients, deny_all))) == []


def test_a_rule_on_application_security_groups_is_not_taken_for_everyone() -> None:
    """Such a rule names groups, not prefixes (securityRules[].properties.sourceApplicationSecurityGroups in the shipped
    schema src/hpclz/armschemas/schemas/2024-05-01/Microsoft.Network.NRP.json); whom they hold is not read, so it is not taken to deny the clients."""
    asg = rule("deny-asg", 120, "Inbound", "Deny", sourceAddressPrefix=None)
    asg["properties"]["sourceApplicationSecurityGroups"] = [
        {"id": f"{SPOKE_RG}/providers/Microsoft.Network/applicationSecurityGroups/batch"}
    ]
    assert messages(NsgBlocksLustre, _lustre_ctx(nsg(asg))) == []


# --- the spoke's peering and the hub's gateway transit (finding 5) --------------------------------------------


def _peering(remote: str, state: str, **flags: bool) -> dict[str, Any]:
    """VirtualNetworkPeeringGet.json pointed at `remote`, in `state`, with its flags changed."""
    body = spec(
        "vnet_peering_get",
        **{"/subscriptions/subid/resourceGroups/peerTest/providers/Microsoft.Network/virtualNetworks/vnet2": remote},
    )
    body["properties"].update(peeringState=state, **flags)
    return body


def _hub(*peerings: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "vnet-hub-weu",
        "id": HUB_ID,
        "type": "Microsoft.Network/virtualNetworks",
        "properties": {
            "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": [
                {
                    "name": "GatewaySubnet",
                    "id": f"{HUB_ID}/subnets/GatewaySubnet",
                    "properties": {"addressPrefix": "10.0.255.0/27"},
                }
            ],
            "virtualNetworkPeerings": list(peerings),
        },
    }


def _gateway() -> dict[str, Any]:
    """VirtualNetworkGatewayList.json's first gateway, moved into the hub's group and its GatewaySubnet."""
    return spec(
        "vnet_gateway_list_first",
        **{
            "/subscriptions/subid/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet1": HUB_ID,
            "/subscriptions/subid/resourceGroups/rg1": HUB_RG,
        },
    )


def _finance() -> LoadedConfig:
    return loaded(preset("finance", **{"network.hub_peering.remote_vnet_id": HUB_ID}))


def test_the_spoke_peering_must_be_connected_and_use_the_gateways(arm: ArmStandIn) -> None:
    config = _finance()
    ctx = read(arm, config, vnet=vnet_body(config))
    assert messages(SpokePeeringNotConnected, ctx) == [f"the VNet has no peering to {HUB_ID}"]
    initiated = _peering(HUB_ID, "Initiated")
    ctx = read(arm, config, vnet=vnet_body(config, peerings=[initiated]))
    assert messages(SpokePeeringNotConnected, ctx) == [
        "peering peer is Initiated, not Connected",
        "peering peer does not use the hub's gateways, as the config declares",
    ]
    connected = _peering(HUB_ID, "Connected", useRemoteGateways=True)
    assert messages(SpokePeeringNotConnected, read(arm, config, vnet=vnet_body(config, peerings=[connected]))) == []


def test_the_hub_side_is_read_for_a_gateway_and_gateway_transit(arm: ArmStandIn) -> None:
    """A gateway known only from Virtual Network Gateways - List counts; the hub's own peering to the spoke must
    allow gateway transit (ARM's words for the refusal: hashicorp/terraform#20298)."""
    config = _finance()
    spoke = vnet_body(config, peerings=[_peering(HUB_ID, "Connected", useRemoteGateways=True)])
    back = _peering(VNET_ID, "Connected")  # the spec example's allowGatewayTransit: false
    ctx = read(arm, config, vnet=spoke, hub=_hub(back))
    assert messages(HubHasNoGateway, ctx) == [
        "the hub VNet's GatewaySubnet holds no virtual network gateway (ARM: RemoteVnetHasNoGateways)",
        f"the hub's peering peer to vnet-spoke has allowGatewayTransit false (ARM: {NO_TRANSIT})",
    ]
    back["properties"]["allowGatewayTransit"] = True
    ctx = read(arm, config, vnet=spoke, hub=_hub(back), gateway=_gateway())
    assert ctx.hub_gateways is not None and [g["name"] for g in ctx.hub_gateways] == ["vpngw1"]
    assert messages(HubHasNoGateway, ctx) == []
    [alone] = HubHasNoGateway().check(read(arm, config, vnet=spoke, hub=_hub()))
    assert alone.severity is Severity.WARNING and "no peering to vnet-spoke yet" in alone.message


# --- an existing Managed Lustre file system ---------------------------------------------------------------------

LUSTRE_ID = f"/subscriptions/{SUB}/resourceGroups/scgroup/providers/Microsoft.StorageCache/amlFilesystems/fs1"


def _with_lustre(mgs: str) -> LoadedConfig:
    data = preset("ai-training")
    data["storage"]["lustre"] = {"mode": "existing", "resource_id": LUSTRE_ID, "mgs_address": mgs}
    return loaded(data)


def test_an_existing_lustre_is_read_and_compared(arm: ArmStandIn) -> None:
    config = _with_lustre("10.0.0.4")
    ctx = read(arm, config, vnet=vnet_body(config))
    assert messages(ExistingLustreMatches, ctx) == [f"{LUSTRE_ID} does not exist"]
    as_in_spec = spec("amlfs_get", **{"00000000-0000-0000-0000-000000000000": SUB})
    other_vnet = f"/subscriptions/{SUB}/resourceGroups/scgroup/providers/Microsoft.Network/virtualNetworks/scvnet"
    ctx = read(arm, _with_lustre("10.0.0.5"), vnet=vnet_body(config), lustre=as_in_spec)
    assert messages(ExistingLustreMatches, ctx) == [
        "the file system's MGS address is 10.0.0.4, not 10.0.0.5",
        f"the file system sits in {other_vnet.lower()}, which the zone's VNet is not peered with",
    ]
    in_zone = spec("amlfs_get", **{"00000000-0000-0000-0000-000000000000": SUB, other_vnet: VNET_ID})
    assert messages(ExistingLustreMatches, read(arm, config, vnet=vnet_body(config), lustre=in_zone)) == []


# --- an existing Key Vault ---------------------------------------------------------------------------------------

VAULT_ID = f"/subscriptions/{SUB}/resourceGroups/sample-resource-group/providers/Microsoft.KeyVault/vaults/sample-vault"


def test_an_existing_vault_is_read_for_existence_and_permission_model(arm: ArmStandIn) -> None:
    data = preset("ai-training")
    data["identity"]["key_vault"] = {"mode": "existing", "resource_id": VAULT_ID}
    config = loaded(data)
    assert messages(ExistingVaultUnfit, read(arm, config, vnet=vnet_body(config))) == [f"{VAULT_ID} does not exist"]
    spec_vault = spec("keyvault_get", **{"00000000-0000-0000-0000-000000000000": SUB})
    [finding] = ExistingVaultUnfit().check(read(arm, config, vnet=vnet_body(config), vault=spec_vault))
    assert finding.severity is Severity.WARNING  # hpclz reads no secret from an existing vault (HPCLZ-CMP-040)
    assert finding.message == (
        "the vault uses access policies, not Azure RBAC: role assignments on it grant no access to its secrets"
    )
    spec_vault["properties"]["enableRbacAuthorization"] = True
    assert messages(ExistingVaultUnfit, read(arm, config, vnet=vnet_body(config), vault=spec_vault)) == []


# --- an existing NetApp account -----------------------------------------------------------------------------------

NETAPP_ACCOUNT = f"/subscriptions/{SUB}/resourceGroups/myRG/providers/Microsoft.NetApp/netAppAccounts/account1"


def _with_netapp() -> LoadedConfig:
    """manufacturing's two volumes (apps NFSv4.1, results NFSv3), now in an account it does not own."""
    data = preset("manufacturing")
    data["storage"]["netapp"] = {
        "mode": "existing",
        "account_resource_id": NETAPP_ACCOUNT,
        "volumes": [
            {**v, "name": n} for v, n in zip(data["storage"]["netapp"]["volumes"], ("volume1", "results"), strict=True)
        ],
    }
    return loaded(data)


def test_existing_netapp_volumes_are_listed_across_pools_and_checked(arm: ArmStandIn) -> None:
    config = _with_netapp()
    assert messages(ExistingNetAppVolumes, read(arm, config, vnet=vnet_body(config))) == [
        f"{NETAPP_ACCOUNT} does not exist"
    ]
    moves = {"D633CC2E-722B-4AE1-B636-BBD9E4C60ED9": SUB}
    account = {"id": NETAPP_ACCOUNT, "name": "account1", "type": "Microsoft.NetApp/netAppAccounts", "properties": {}}
    pool, volume = spec("netapp_pool_list_first", **moves), spec("netapp_volume_list_first", **moves)
    ctx = read(arm, config, vnet=vnet_body(config), account=account, pool=pool, volume=volume)
    assert messages(ExistingNetAppVolumes, ctx) == [
        "volume volume1 speaks NFSv3, not NFSv4.1",  # the example declares no protocolTypes: the default
        "the account has no volume named results",
    ]
    admin, compute = (str(getattr(config.config.network.vnet.subnets, r).cidr) for r in ("admin", "compute"))
    volume["properties"]["protocolTypes"] = ["NFSv4.1"]
    volume["properties"]["exportPolicy"] = {
        "rules": [{"ruleIndex": 1, "unixReadWrite": True, "nfsv3": False, "nfsv41": True, "allowedClients": compute}]
    }
    ctx = read(arm, config, vnet=vnet_body(config), volume=volume)
    assert messages(ExistingNetAppVolumes, ctx)[0] == (
        f"volume volume1 exports no read-write NFSv4.1 rule to the admin subnet {admin}"
    )
    volume["properties"]["exportPolicy"]["rules"][0]["allowedClients"] = f"{admin}, {compute}"
    results = {**volume, "id": volume["id"].replace("volume1", "results"), "name": "account1/pool1/results"}
    results["properties"] = {
        **volume["properties"],
        "protocolTypes": ["NFSv3"],
        "exportPolicy": {
            "rules": [
                {"ruleIndex": 1, "unixReadWrite": True, "nfsv3": True, "nfsv41": False, "allowedClients": "0.0.0.0/0"}
            ]
        },
    }
    ctx = read(arm, config, vnet=vnet_body(config), volume=volume, results=results)
    assert messages(ExistingNetAppVolumes, ctx) == []


def test_the_hub_side_of_a_vnet_hpclz_creates_is_found_by_its_resource_group(arm: ArmStandIn) -> None:
    """finance creates its VNet: the hub's peering back must name that VNet in the zone's network group, not a
    namesake elsewhere."""
    config = load_config_text(preset_data("finance", **{"network.hub_peering.remote_vnet_id": HUB_ID}), "finance.yaml")
    [network] = [d for d in build_plan(config.config).deployments if d.component == "network"]
    [vnet] = [r for r in network.resources() if r["type"] == "Microsoft.Network/virtualNetworks"]
    spoke_id = f"/subscriptions/{SUB}/resourceGroups/{network.resource_group}/providers/Microsoft.Network/virtualNetworks/{vnet['name']}"
    namesake = _peering(
        spoke_id.replace(str(network.resource_group), "rg-elsewhere"), "Connected", allowGatewayTransit=True
    )
    ctx = read(arm, config, hub=_hub(namesake), gateway=_gateway())
    assert [f.severity for f in HubHasNoGateway().check(ctx)] == [Severity.WARNING]
    back = _peering(spoke_id, "Connected", allowGatewayTransit=True)
    assert messages(HubHasNoGateway, read(arm, config, hub=_hub(back), gateway=_gateway())) == []


# --- through `hpclz deploy` ----------------------------------------------------------------------------------------


def test_deploy_stops_at_preflight_on_an_nsg_that_blocks_lustre(arm: ArmStandIn, tmp_path: Path, run_cli) -> None:
    """The whole path: the CLI's preflight reads the existing VNet and its NSGs from the stand-in, reports the
    denying rule at the config line of the subnet, exits 1 and writes nothing to Azure."""
    data = preset("ai-training")
    config = tmp_path / "lz.yaml"
    with config.open("w", encoding="utf-8") as out:
        YAML().dump(data, out)
    names = subnet_names(loaded(data))
    lustre_nsg = nsg(rule("deny-all-inbound", 120, "Inbound", "Deny"))
    for body in (vnet_body(loaded(data), nsgs=dict.fromkeys(names, NSG_ID)), lustre_nsg):
        arm.world.resources[str(body["id"]).lower()] = body
    result = run_cli("deploy", str(config), "--yes")
    assert result.exit_code == 1, result.stdout
    assert (
        "HPCLZ-NET-104" in result.stdout
        and "rule deny-all-inbound (priority 120) denies inbound TCP 988" in result.stdout
    )
    assert f"{config}:" in result.stdout  # located in the config file
    assert "nothing was deployed" in result.stdout
    assert [r.path for r in arm.log if r.method == "PUT"] == []
