"""The Blob front's user delegation keys and SAS (tests/support/arm_standin/user_delegation.py), through the real
azure-storage-blob SDK against a hand-made account: who gets a key, what the key's SAS may do, and Azure's refusals
(status and x-ms-error-code) of the rest. The deployed-preset proof is tests/deploy/test_user_delegation_sas.py."""

from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError
from azure.storage.blob import BlobServiceClient, ContainerSasPermissions, generate_container_sas

from hpclz.azure.clients import StaticTokenCredential
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.data_planes import BlobFront
from tests.support.arm_standin.user_delegation import layout
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, shared_azurite

SUB = "/subscriptions/00000000-0000-0000-0000-00000000c0de"
ACCOUNT_ID = f"{SUB}/resourceGroups/rg-st/providers/Microsoft.Storage/storageAccounts/stdata"
CONTAINER = f"{ACCOUNT_ID}/blobServices/default/containers/checkpoints"


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        standin.world.resources[ACCOUNT_ID.lower()] = {
            "id": ACCOUNT_ID,
            "name": "stdata",
            "type": "Microsoft.Storage/storageAccounts",
            "properties": {"networkAcls": {"defaultAction": "Allow"}},
        }
        yield standin


@pytest.fixture
def front(arm: ArmStandIn) -> Iterator[BlobFront]:
    front = BlobFront(arm, ACCOUNT_ID, shared_azurite().account_url, tls=True).start()
    service = BlobServiceClient.from_connection_string(shared_azurite().connection_string)
    if not service.get_container_client("checkpoints").exists():
        service.create_container("checkpoints")
    try:
        yield front
    finally:
        front.stop()


def _service(front: BlobFront, token: str) -> BlobServiceClient:
    return BlobServiceClient(
        front.account_url, credential=StaticTokenCredential(token), retry_total=0, connection_verify=front.standin.cert
    )


def _key(front: BlobFront, token: str, hours: float = 1) -> Any:
    now = datetime.now(UTC)
    return _service(front, token).get_user_delegation_key(now, now + timedelta(hours=hours))


def _sas(key: Any, permission: str, expiry: timedelta = timedelta(minutes=30), container: str = "checkpoints") -> str:
    return generate_container_sas(
        ACCOUNT, container, user_delegation_key=key, permission=ContainerSasPermissions.from_string(permission),
        expiry=datetime.now(UTC) + expiry,
    )  # fmt: skip


def _put(front: BlobFront, sas: str, name: str = "") -> tuple[int, str]:
    """Put Blob with the SAS, as a job's tool sends it: (status, x-ms-error-code)."""
    status, code, _ = _put_detail(front, sas, name)
    return status, code


def _put_detail(front: BlobFront, sas: str, name: str = "") -> tuple[int, str, str]:
    """(status, x-ms-error-code, the error body's AuthenticationErrorDetail)."""
    url = f"{front.account_url}/checkpoints/{name or uuid.uuid4()}.bin?{sas}"
    headers = {"x-ms-version": "2026-10-06", "x-ms-blob-type": "BlockBlob"}
    request = urllib.request.Request(url, data=b"step", headers=headers, method="PUT")
    context = ssl.create_default_context(cafile=str(front.standin.cert))
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status, "", ""
    except urllib.error.HTTPError as exc:
        detail = ET.fromstring(exc.read()).findtext("AuthenticationErrorDetail") or ""
        return exc.code, exc.headers.get("x-ms-error-code") or "", detail


def _refusal(call: Any) -> tuple[int | None, str | None]:
    with pytest.raises(HttpResponseError) as caught:
        call()
    response: Any = caught.value.response  # the transport's response, with the service's headers
    return caught.value.status_code, response.headers.get("x-ms-error-code")


def test_the_installed_sdk_signs_a_version_the_front_judges(front: BlobFront, arm: ArmStandIn) -> None:
    who, token = arm.proving.principal("a job", kind="ServicePrincipal")
    arm.proving.authorization.grant(who.object_id, "Storage Blob Data Contributor", ACCOUNT_ID)
    sas = _sas(_key(front, token), "rw")
    assert "sv=2026-10-06" in sas  # azure-storage-blob 12.31.1's X_MS_VERSION
    assert layout("2026-10-06")
    with pytest.raises(LookupError):
        layout("2019-12-12")  # not judged: the stand-in says so instead of answering in Azure's name


def test_a_key_needs_the_action_at_the_account_not_a_container(front: BlobFront, arm: ArmStandIn) -> None:
    who, token = arm.proving.principal("a container writer", kind="ServicePrincipal")
    arm.proving.authorization.grant(who.object_id, "Storage Blob Data Contributor", CONTAINER)
    assert _refusal(lambda: _key(front, token)) == (403, "AuthorizationPermissionMismatch")
    # "you can additionally assign the Storage Blob Delegator role ... at the level of the storage account"
    arm.proving.authorization.grant(who.object_id, "Storage Blob Delegator", ACCOUNT_ID)
    key = _key(front, token)
    assert (key.signed_oid, key.signed_service, key.signed_version) == (who.object_id, "b", "2026-10-06")
    assert _put(front, _sas(key, "rw"))[0] == 201


def test_a_key_lives_seven_days_at_most(front: BlobFront, arm: ArmStandIn) -> None:
    who, token = arm.proving.principal("a reader", kind="ServicePrincipal")
    arm.proving.authorization.grant(who.object_id, "Storage Blob Data Reader", ACCOUNT_ID)
    assert _refusal(lambda: _key(front, token, hours=24 * 7 + 1)) == (400, "InvalidXmlNodeValue")
    now = datetime.now(UTC)
    backwards = _service(front, token).get_user_delegation_key
    refused = _refusal(lambda: backwards(now + timedelta(hours=2), now + timedelta(hours=1)))
    assert refused == (400, "InvalidXmlNodeValue")
    assert _key(front, token, hours=24 * 6).value


def test_the_sas_is_the_intersection_of_sp_and_the_principals_roles(front: BlobFront, arm: ArmStandIn) -> None:
    who, token = arm.proving.principal("a job", kind="ServicePrincipal")
    arm.proving.authorization.grant(who.object_id, "Storage Blob Data Reader", ACCOUNT_ID)
    key = _key(front, token)
    assert _put(front, _sas(key, "rw")) == (403, "AuthorizationPermissionMismatch")  # the principal only reads
    arm.proving.authorization.grant(who.object_id, "Storage Blob Data Contributor", CONTAINER)
    assert _put(front, _sas(key, "rw"))[0] == 201  # the same key, the role judged at use time
    assert _put(front, _sas(key, "r")) == (403, "AuthorizationPermissionMismatch")  # sp does not grant the write


def test_bad_signatures_times_and_keys_fail_authentication(front: BlobFront, arm: ArmStandIn) -> None:
    who, token = arm.proving.principal("a job", kind="ServicePrincipal")
    arm.proving.authorization.grant(who.object_id, "Storage Blob Data Contributor", ACCOUNT_ID)
    key = _key(front, token)
    sas = _sas(key, "rw")
    status, code, detail = _put_detail(front, sas.replace("sp=rw", "sp=rwd"))  # tampered
    assert (status, code) == (403, "AuthenticationFailed") and detail.startswith("Signature did not match.")
    status, code, detail = _put_detail(front, _sas(key, "rw", expiry=timedelta(minutes=-1)))  # expired
    assert (status, code) == (403, "AuthenticationFailed")
    assert detail.startswith("Signature not valid in the specified time frame")
    other = _sas(key, "rw", container="datasets").replace("datasets", "checkpoints")  # signed for another container
    assert _put_detail(front, other)[:2] == (403, "AuthenticationFailed")
    forged = key.value
    key.value = "A" * 43 + "="  # a key the service never issued, under the issued key's fields
    assert _put_detail(front, _sas(key, "rw"))[:2] == (403, "AuthenticationFailed")
    key.value = forged
    key.signed_expiry = "2020-01-01T00:00:00Z"  # no key of that lifetime was issued
    assert _put_detail(front, _sas(key, "rw")) == (
        403,
        "AuthenticationFailed",
        "Signature validation failed. Signature key not found.",
    )
    assert _put(front, sas)[0] == 201  # the untouched SAS still writes
    assert arm.bugs == []


def test_a_sas_stops_when_its_key_expires(front: BlobFront, arm: ArmStandIn) -> None:
    who, token = arm.proving.principal("a job", kind="ServicePrincipal")
    arm.proving.authorization.grant(who.object_id, "Storage Blob Data Contributor", ACCOUNT_ID)
    now = datetime.now(UTC)
    service = _service(front, token)
    # A key that started an hour ago and ended a second ago, as a service that issued it then would hold it.
    key = service.get_user_delegation_key(now - timedelta(hours=1), now + timedelta(seconds=1))
    time.sleep(2)
    status, code, detail = _put_detail(front, _sas(key, "rw"))  # the SAS itself still has 30 minutes
    assert (status, code) == (403, "AuthenticationFailed") and "user delegation key expired" in detail


def test_a_key_is_for_entra_id_callers_only(front: BlobFront) -> None:
    service = BlobServiceClient.from_connection_string(
        front.connection_string(ACCOUNT, ACCOUNT_KEY), retry_total=0, connection_verify=front.standin.cert
    )
    now = datetime.now(UTC)
    assert _refusal(lambda: service.get_user_delegation_key(now, now + timedelta(hours=1))) == (
        403,
        "AuthenticationFailed",
    )
