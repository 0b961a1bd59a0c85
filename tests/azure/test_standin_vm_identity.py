"""The stand-in's VM side of a data-plane call with a managed identity: its instance metadata service issues a token
only for an identity the VM carries (tests/support/arm_standin/imds.py), and a Blob front judges a bearer token by the
principal's data actions before Azurite sees the call (data_planes.BlobFront). Plain HTTP, as a VM's script calls."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient

from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.data_planes import BlobFront
from tests.support.arm_standin.imds import Imds
from tests.support.azurite import shared_azurite

SUB = "/subscriptions/00000000-0000-0000-0000-00000000c0de"
ACCOUNT_ID = f"{SUB}/resourceGroups/rg-st/providers/Microsoft.Storage/storageAccounts/stlocker"
IDENTITY = f"{SUB}/resourceGroups/rg-mgmt/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-cc"
OTHER = f"{SUB}/resourceGroups/rg-mgmt/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-other"
PRINCIPAL = "11111111-2222-3333-4444-555555555555"


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin


def _put(arm: ArmStandIn, rid: str, rtype: str, properties: dict[str, Any]) -> None:
    arm.world.resources[rid.lower()] = {
        "id": rid,
        "name": rid.rsplit("/", 1)[-1],
        "type": rtype,
        "properties": properties,
    }


def _vm(arm: ArmStandIn) -> dict[str, Any]:
    vm_id = arm.compute.add("rg-cc", "vm-cc", {})
    vm = arm.world.resources[vm_id.lower()]
    vm["identity"] = {"type": "UserAssigned", "userAssignedIdentities": {IDENTITY: {}}}
    for rid, principal in ((IDENTITY, PRINCIPAL), (OTHER, "99999999-2222-3333-4444-555555555555")):
        _put(arm, rid, "Microsoft.ManagedIdentity/userAssignedIdentities", {"principalId": principal})
    return vm


def _get(url: str, headers: dict[str, str]) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _token(base: str, identity: str) -> tuple[int, str]:
    query = urllib.parse.urlencode(
        {"api-version": "2018-02-01", "resource": "https://storage.azure.com/", "mi_res_id": identity}
    )
    return _get(f"{base}/metadata/identity/oauth2/token?{query}", {"Metadata": "true"})


def test_the_vm_gets_tokens_for_its_own_identities_only(arm: ArmStandIn) -> None:
    vm = _vm(arm)
    imds = Imds(arm).start()
    try:
        base = imds.route(vm, imds.url)
        status, body = _token(base, IDENTITY)
        assert status == 200
        who = arm.proving.caller("Bearer " + json.loads(body)["access_token"])
        assert who is not None and who.object_id == PRINCIPAL
        assert _token(base, OTHER) == (
            400,
            json.dumps({"error": "invalid_request", "error_description": "Identity not found"}),
        )
        assert _get(f"{base}/metadata/instance/compute/subscriptionId?format=text", {"Metadata": "true"}) == (
            200,
            arm.subscription_id,
        )
        assert _token(imds.url, IDENTITY)[0] == 400  # no VM in the path: not a VM's call
    finally:
        imds.stop()


def test_a_bearer_call_on_a_blob_needs_the_data_action(arm: ArmStandIn) -> None:
    _put(arm, ACCOUNT_ID, "Microsoft.Storage/storageAccounts", {"networkAcls": {"defaultAction": "Allow"}})
    vm = _vm(arm)
    imds = Imds(arm).start()
    front = BlobFront(arm, ACCOUNT_ID, shared_azurite().account_url).start()
    try:
        token = json.loads(_token(imds.route(vm, imds.url), IDENTITY)[1])["access_token"]
        headers = {"Authorization": "Bearer " + token, "x-ms-version": "2021-08-06", "x-ms-blob-type": "BlockBlob"}
        url = f"{front.account_url}/hpclz/probe-{PRINCIPAL}.txt"

        def put() -> tuple[int, str]:
            request = urllib.request.Request(url, data=b"probe", headers=headers, method="PUT")
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return response.status, ""
            except urllib.error.HTTPError as exc:
                return exc.code, exc.headers.get("x-ms-error-code") or ""

        assert put() == (403, "AuthorizationPermissionMismatch")
        assert _get(url, headers)[0] == 403  # nor may it read
        arm.proving.authorization.grant(PRINCIPAL, "Storage Blob Data Reader", ACCOUNT_ID)
        assert put() == (403, "AuthorizationPermissionMismatch")  # reading is not writing
        arm.proving.authorization.grant(PRINCIPAL, "Storage Blob Data Contributor", ACCOUNT_ID)
        container = BlobServiceClient.from_connection_string(shared_azurite().connection_string).get_container_client(
            "hpclz"
        )
        if not container.exists():
            container.create_container()
        assert put()[0] == 201
        assert _get(url, headers) == (200, "probe")
        unknown = {**headers, "Authorization": "Bearer not-a-token"}
        assert _get(url, unknown)[0] == 401
    finally:
        front.stop()
        imds.stop()
