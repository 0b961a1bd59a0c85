"""Network reach of the stand-in's data planes (tests/support/arm_standin/reach.py, data_planes.py), each rule through
the real SDK clients: azure-storage-blob against Azurite behind the account's network, azure-keyvault-secrets against
the vault front. The resources are shaped as the zone's templates and ARM leave them (templates/arm/storage/
main.json.j2's locker, templates/arm/_private_endpoint.json.j2, the network template's DNS zone links)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpclz.azure.clients import StaticTokenCredential
from hpclz.azure.errors import storage_code
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.data_planes import BlobFront, VaultFront
from tests.support.arm_standin.reach import WORKSTATION, Origin
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, shared_azurite

SUB = "/subscriptions/00000000-0000-0000-0000-00000000c0de"
RG = SUB + "/resourceGroups/rg-lz/providers"
ACCOUNT_ID = f"{RG}/Microsoft.Storage/storageAccounts/stlocker"
VAULT_ID = f"{RG}/Microsoft.KeyVault/vaults/kv-lz"
VNET = f"{RG}/Microsoft.Network/virtualNetworks/vnet-lz"
PEERED = f"{RG}/Microsoft.Network/virtualNetworks/vnet-hub"
ELSEWHERE = f"{RG}/Microsoft.Network/virtualNetworks/vnet-other"
COMPUTE = f"{VNET}/subnets/compute"
ENDPOINTS = f"{VNET}/subnets/private-endpoints"
CONTAINER = "hpclz-wheels"


def _put(arm: ArmStandIn, rid: str, rtype: str, properties: dict[str, Any], **extra: Any) -> None:
    name = rid.rsplit("/", 1)[-1]
    arm.world.resources[rid.lower()] = {"id": rid, "name": name, "type": rtype, "properties": properties, **extra}


def _account(arm: ArmStandIn, public: str = "Disabled", acls: dict[str, Any] | None = None) -> None:
    # The locker's own settings (templates/arm/storage/main.json.j2).
    default = {"defaultAction": "Deny", "bypass": "None", "ipRules": [], "virtualNetworkRules": []}
    _put(
        arm,
        ACCOUNT_ID,
        "Microsoft.Storage/storageAccounts",
        {"publicNetworkAccess": public, "networkAcls": default if acls is None else acls},
    )


def _vault(arm: ArmStandIn, public: str = "Disabled", acls: dict[str, Any] | None = None) -> None:
    default = {"defaultAction": "Deny", "bypass": "AzureServices", "ipRules": [], "virtualNetworkRules": []}
    _put(
        arm,
        VAULT_ID,
        "Microsoft.KeyVault/vaults",
        {"publicNetworkAccess": public, "networkAcls": default if acls is None else acls},
        location="eastus",
    )


def _private_endpoint(arm: ArmStandIn, target: str, group: str, dns: bool = True, link: str = VNET) -> None:
    """A private endpoint in the zone's endpoint subnet, its record in the group's privatelink zone, and the zone
    linked to `link` (the network template links it to the zone's VNet)."""
    zone_name = {"blob": "privatelink.blob.core.windows.net", "vault": "privatelink.vaultcore.azure.net"}[group]
    pe = f"{RG}/Microsoft.Network/privateEndpoints/pe-{group}"
    connection = {"name": "pe", "properties": {"privateLinkServiceId": target, "groupIds": [group]}}
    _put(
        arm,
        pe,
        "Microsoft.Network/privateEndpoints",
        {"subnet": {"id": ENDPOINTS}, "privateLinkServiceConnections": [connection]},
    )
    if not dns:
        return
    zone = f"{RG}/Microsoft.Network/privateDnsZones/{zone_name}"
    _put(arm, zone, "Microsoft.Network/privateDnsZones", {})
    _put(
        arm,
        f"{zone}/virtualNetworkLinks/link",
        "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
        {"virtualNetwork": {"id": link}, "registrationEnabled": False},
    )
    configs = [{"name": group, "properties": {"privateDnsZoneId": zone}}]
    _put(
        arm,
        f"{pe}/privateDnsZoneGroups/default",
        "Microsoft.Network/privateEndpoints/privateDnsZoneGroups",
        {"privateDnsZoneConfigs": configs},
    )


@pytest.fixture
def arm(tmp_path: Path) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin") as standin:
        yield standin
        assert standin.bugs == [], standin.bugs


@contextlib.contextmanager
def blob_from(arm: ArmStandIn, origin: Origin) -> Iterator[Any]:
    """A BlobServiceClient on `origin`'s route to the account (Azurite behind it)."""
    from azure.storage.blob import BlobServiceClient

    front = BlobFront(arm, ACCOUNT_ID, shared_azurite().account_url, origin).start()
    try:
        yield BlobServiceClient.from_connection_string(front.connection_string(ACCOUNT, ACCOUNT_KEY))
    finally:
        front.stop()


@contextlib.contextmanager
def vault_from(arm: ArmStandIn, origin: Origin, token: str | None = None) -> Iterator[tuple[Any, VaultFront]]:
    from azure.keyvault.secrets import SecretClient

    front = VaultFront(arm, VAULT_ID, origin).start()
    try:
        client = SecretClient(
            front.vault_url,
            StaticTokenCredential(token or arm.token),
            verify_challenge_resource=False,  # the vault answers on 127.0.0.1, not *.vault.azure.net
            connection_verify=str(arm.cert),
        )
        yield client, front
    finally:
        front.stop()


def _upload(service: Any, name: str) -> None:
    with contextlib.suppress(Exception):
        service.create_container(CONTAINER)
    service.get_blob_client(CONTAINER, name).upload_blob(b"wheel bytes", overwrite=True)


def _blob_refused(service: Any, name: str) -> str:
    from azure.core.exceptions import HttpResponseError

    with pytest.raises(HttpResponseError) as refused:
        service.get_blob_client(CONTAINER, name).upload_blob(b"wheel bytes", overwrite=True)
    assert refused.value.status_code == 403
    assert "This request is not authorized to perform this operation." in str(refused.value)
    return storage_code(refused.value)


VM = Origin(subnet=COMPUTE, address="203.0.113.7", name="VM in the zone's compute subnet")


# ----- Blob -----
def test_a_private_account_refuses_the_workstation_with_storages_answer(arm: ArmStandIn) -> None:
    _account(arm)
    _private_endpoint(arm, ACCOUNT_ID, "blob")
    with blob_from(arm, WORKSTATION) as service:
        assert _blob_refused(service, "a/w.whl") == "AuthorizationFailure"


def test_a_vm_in_the_vnet_reaches_it_through_its_private_endpoint_and_linked_zone(arm: ArmStandIn) -> None:
    _account(arm)
    _private_endpoint(arm, ACCOUNT_ID, "blob")
    with blob_from(arm, VM) as service:
        _upload(service, "b/w.whl")
        assert service.get_blob_client(CONTAINER, "b/w.whl").download_blob().readall() == b"wheel bytes"


def test_without_the_zone_linked_to_its_vnet_the_name_resolves_publicly_and_is_refused(arm: ArmStandIn) -> None:
    _account(arm)
    _private_endpoint(arm, ACCOUNT_ID, "blob", link=ELSEWHERE)
    with blob_from(arm, VM) as service:
        assert _blob_refused(service, "c/w.whl") == "AuthorizationFailure"


def test_without_a_dns_record_the_endpoint_is_not_used(arm: ArmStandIn) -> None:
    _account(arm)
    _private_endpoint(arm, ACCOUNT_ID, "blob", dns=False)
    with blob_from(arm, VM) as service:
        assert _blob_refused(service, "d/w.whl") == "AuthorizationFailure"


def test_a_peered_vnet_routes_to_the_endpoint_an_unpeered_one_does_not(arm: ArmStandIn) -> None:
    _account(arm)
    _private_endpoint(arm, ACCOUNT_ID, "blob", link=PEERED)
    hub = Origin(subnet=f"{PEERED}/subnets/jump")
    with blob_from(arm, hub) as service:
        assert _blob_refused(service, "e/w.whl") == "AuthorizationFailure"
    _put(
        arm,
        f"{PEERED}/virtualNetworkPeerings/hub-to-lz",
        "Microsoft.Network/virtualNetworks/virtualNetworkPeerings",
        {"remoteVirtualNetwork": {"id": VNET}},
    )
    with blob_from(arm, hub) as service:
        _upload(service, "e/w.whl")


def test_ip_rules_let_in_the_addresses_they_name_and_nobody_else(arm: ArmStandIn) -> None:
    _account(arm, "Enabled", {"defaultAction": "Deny", "ipRules": [{"value": "198.51.100.0/24", "action": "Allow"}]})
    with blob_from(arm, Origin(address="198.51.100.20")) as service:
        _upload(service, "f/w.whl")
    with blob_from(arm, Origin(address="198.51.101.20")) as service:
        assert _blob_refused(service, "f/w.whl") == "AuthorizationFailure"
    # The workstation's own address as the service sees it on the wire (loopback here).
    _account(arm, "Enabled", {"defaultAction": "Deny", "ipRules": [{"value": "127.0.0.1", "action": "Allow"}]})
    with blob_from(arm, WORKSTATION) as service:
        _upload(service, "f/w.whl")


def test_ip_rules_do_not_open_an_account_whose_public_access_is_disabled(arm: ArmStandIn) -> None:
    _account(arm, "Disabled", {"defaultAction": "Deny", "ipRules": [{"value": "127.0.0.1", "action": "Allow"}]})
    with blob_from(arm, WORKSTATION) as service:
        assert _blob_refused(service, "g/w.whl") == "AuthorizationFailure"


def test_a_virtual_network_rule_needs_the_subnets_storage_service_endpoint(arm: ArmStandIn) -> None:
    rules = {"defaultAction": "Deny", "virtualNetworkRules": [{"id": COMPUTE, "action": "Allow"}]}
    _account(arm, "Enabled", rules)
    _put(arm, COMPUTE, "Microsoft.Network/virtualNetworks/subnets", {"addressPrefix": "10.0.1.0/24"})
    with blob_from(arm, VM) as service:
        assert _blob_refused(service, "h/w.whl") == "AuthorizationFailure"
    endpoint = {"addressPrefix": "10.0.1.0/24", "serviceEndpoints": [{"service": "Microsoft.Storage"}]}
    _put(arm, COMPUTE, "Microsoft.Network/virtualNetworks/subnets", endpoint)
    with blob_from(arm, VM) as service:
        _upload(service, "h/w.whl")


def test_trusted_services_pass_the_firewall_only_where_bypass_names_them(arm: ArmStandIn) -> None:
    backup = Origin(trusted_service="Azure Backup", address="52.0.0.1")
    _account(arm, "Enabled", {"defaultAction": "Deny", "bypass": "None"})
    with blob_from(arm, backup) as service:
        assert _blob_refused(service, "i/w.whl") == "AuthorizationFailure"
    _account(arm, "Enabled", {"defaultAction": "Deny", "bypass": "Logging, Metrics, AzureServices"})
    with blob_from(arm, backup) as service:
        _upload(service, "i/w.whl")


def test_default_allow_takes_everyone_and_a_later_change_to_the_account_applies_at_once(arm: ArmStandIn) -> None:
    _account(arm, "Enabled", {"defaultAction": "Allow"})
    with blob_from(arm, WORKSTATION) as service:
        _upload(service, "j/w.whl")
        _account(arm)  # a redeploy turns public access off: the next call is refused
        assert _blob_refused(service, "j/w.whl") == "AuthorizationFailure"


# ----- Key Vault -----
def _vault_error(call: Any) -> tuple[int, str, str]:
    from azure.core.exceptions import HttpResponseError

    with pytest.raises(HttpResponseError) as refused:
        call()
    response = refused.value.response
    assert response is not None
    error = json.loads(response.text())["error"]
    return int(refused.value.status_code or 0), str(error["innererror"]["code"]), str(error["message"])


def test_a_private_vault_refuses_the_workstation_by_firewall(arm: ArmStandIn) -> None:
    _vault(arm)
    _private_endpoint(arm, VAULT_ID, "vault")
    with vault_from(arm, WORKSTATION) as (client, _front):
        status, inner, message = _vault_error(lambda: client.get_secret("slurmdbd-password"))
    assert (status, inner) == (403, "ForbiddenByFirewall")
    assert message.startswith("Client address is not authorized and caller is not a trusted service.")
    assert "Client address: 127.0.0.1" in message


def test_inside_the_vnet_the_firewall_passes_and_rbac_decides(arm: ArmStandIn) -> None:
    _vault(arm)
    _private_endpoint(arm, VAULT_ID, "vault")
    reader, token = arm.proving.principal("node identity", kind="ServicePrincipal")
    arm.proving.authorization.grant(reader.object_id, "Key Vault Secrets User", VAULT_ID)
    # The deploying user holds Owner, which has no data actions: setting a secret is refused by RBAC, not by the
    # network (the firewall comes first: a refusal by it would say ForbiddenByFirewall).
    with vault_from(arm, VM) as (owner, front):
        status, inner, message = _vault_error(lambda: owner.set_secret("slurmdbd-password", "s3cret"))
        assert (status, inner) == (403, "ForbiddenByRbac")
        assert "Microsoft.KeyVault/vaults/secrets/setSecret/action" in message
        front.secrets["slurmdbd-password"] = [("v1", "s3cret")]
    with vault_from(arm, VM, token) as (client, front):
        front.secrets["slurmdbd-password"] = [("v1", "s3cret")]
        assert client.get_secret("slurmdbd-password").value == "s3cret"
        status, inner, _ = _vault_error(lambda: client.set_secret("slurmdbd-password", "other"))
        assert (status, inner) == (403, "ForbiddenByRbac")


def test_trusted_services_reach_a_vault_even_with_public_access_disabled_if_bypass_allows(arm: ArmStandIn) -> None:
    reader, token = arm.proving.principal("backup service", kind="ServicePrincipal")
    arm.proving.authorization.grant(reader.object_id, "Key Vault Secrets User", VAULT_ID)
    trusted = Origin(trusted_service="Azure Resource Manager", address="52.0.0.2")
    _vault(arm, "Disabled", {"defaultAction": "Deny", "bypass": "AzureServices"})
    with vault_from(arm, trusted, token) as (client, front):
        front.secrets["s"] = [("v1", "x")]
        assert client.get_secret("s").value == "x"
    _vault(arm, "Disabled", {"defaultAction": "Deny", "bypass": "None"})
    with vault_from(arm, trusted, token) as (client, _front):
        assert _vault_error(lambda: client.get_secret("s"))[:2] == (403, "ForbiddenByFirewall")


def test_vault_ip_rules_when_public_access_is_enabled(arm: ArmStandIn) -> None:
    reader, token = arm.proving.principal("operator", kind="User")
    arm.proving.authorization.grant(reader.object_id, "Key Vault Secrets User", VAULT_ID)
    _vault(arm, "Enabled", {"defaultAction": "Deny", "bypass": "None", "ipRules": [{"value": "127.0.0.1/32"}]})
    with vault_from(arm, WORKSTATION, token) as (client, front):
        front.secrets["s"] = [("v1", "x")]
        assert client.get_secret("s").value == "x"
    with vault_from(arm, Origin(address="198.51.100.9"), token) as (client, _front):
        assert _vault_error(lambda: client.get_secret("s"))[:2] == (403, "ForbiddenByFirewall")


def test_data_plane_refusal_finds_the_account_or_vault_behind_a_path(arm: ArmStandIn) -> None:
    """What the CycleCloud actor asks for each data-plane step (tests/support/arm_standin/cyclecloud.py)."""
    from tests.support.arm_standin.reach import data_plane_refusal

    _account(arm)
    _vault(arm)
    blob = f"{ACCOUNT_ID}/blobServices/default/containers/cyclecloud"
    secret = f"{VAULT_ID}/secrets/slurmdb-password"
    resources = arm.world.resources
    assert data_plane_refusal(blob, WORKSTATION, resources) == (
        "AuthorizationFailure",
        "This request is not authorized to perform this operation.",
    )
    assert data_plane_refusal(secret, VM, resources) == (
        "ForbiddenByFirewall",
        "Client address is not authorized and caller is not a trusted service.",
    )
    _private_endpoint(arm, ACCOUNT_ID, "blob")
    _private_endpoint(arm, VAULT_ID, "vault")
    assert data_plane_refusal(blob, VM, resources) is None
    assert data_plane_refusal(secret, VM, resources) is None
    # Nothing to judge: not a data-plane path, or an account the world does not hold.
    assert data_plane_refusal(ACCOUNT_ID, WORKSTATION, resources) is None
    assert data_plane_refusal(blob.replace("stlocker", "stother"), WORKSTATION, resources) is None


def test_a_vault_virtual_network_rule_reads_the_service_endpoint_from_the_vnets_own_subnets(arm: ArmStandIn) -> None:
    """A subnet declared inside its VNet's body (as the network template declares them) counts as well as a subnet
    resource; the vault's rule needs the subnet's Microsoft.KeyVault endpoint, a storage one does not do."""
    reader, token = arm.proving.principal("node", kind="ServicePrincipal")
    arm.proving.authorization.grant(reader.object_id, "Key Vault Secrets User", VAULT_ID)
    rules = {"defaultAction": "Deny", "bypass": "None", "virtualNetworkRules": [{"id": COMPUTE}]}
    _vault(arm, "Enabled", rules)

    def vnet_with(service: str) -> None:
        subnet = {"name": "compute", "properties": {"serviceEndpoints": [{"service": service}]}}
        _put(arm, VNET, "Microsoft.Network/virtualNetworks", {"subnets": [subnet]})

    vnet_with("Microsoft.Storage")
    with vault_from(arm, VM, token) as (client, front):
        front.secrets["s"] = [("v1", "x")]
        assert _vault_error(lambda: client.get_secret("s"))[:2] == (403, "ForbiddenByFirewall")
    vnet_with("Microsoft.KeyVault")
    with vault_from(arm, VM, token) as (client, front):
        front.secrets["s"] = [("v1", "x")]
        assert client.get_secret("s").value == "x"
