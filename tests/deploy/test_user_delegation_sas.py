"""A job's per-container user delegation SAS in a deployed zone (energy), through the real azure-storage-blob SDK against
the stand-in's Blob front (tests/support/arm_standin/user_delegation.py): the compute identity's node token gets a user
delegation key for the data account; a container SAS with write lets a job write a checkpoint; a datasets SAS with write
is refused at the write (the identity only reads there: the intersection of the key principal's roles and sp); sp=r
refuses a write; a tampered or expired SAS fails authentication; the network refuses the SAS from outside the VNet;
removing the identity's role assignment makes the same SAS fail; the locker identity, with no role on the data account,
gets no key. Each refusal is Azure's status and x-ms-error-code.

The key: Get User Delegation Key needs generateUserDelegationKey "scoped at the level of the storage account, the
resource group, or the subscription" (learn.microsoft.com/rest/api/storageservices/create-user-delegation-sas, "Assign
permissions with RBAC"), and the compute identity's data roles are scoped to containers, so the render grants it the
page's remedy, Storage Blob Delegator at the account (hpclz.render.roles): the zone as deployed issues the key, and
with that one assignment removed the same request is refused."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError
from azure.storage.blob import BlobServiceClient, ContainerSasPermissions, generate_container_sas

from hpclz.azure.clients import StaticTokenCredential
from hpclz.config.loader import load_config
from hpclz.render.zone import LOCKER_IDENTITY, Zone
from tests.conftest import RunCli
from tests.deploy.outside import ids
from tests.deploy.role_assignments import Kind
from tests.deploy.test_proving_ground import deployed, refused, scheduler_identity
from tests.deploy.test_role_removals import BLOB_CONTAINER, COMPUTE, STORAGE_AUDIENCE, World, scope_of
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.authz import Principal
from tests.support.arm_standin.cyclecloud import CycleCloud
from tests.support.arm_standin.data_planes import BlobFront
from tests.support.arm_standin.imds import Imds
from tests.support.arm_standin.reach import WORKSTATION, Origin
from tests.support.azurite import ACCOUNT, shared_azurite

WRITER = Kind("Storage Blob Data Contributor", COMPUTE, BLOB_CONTAINER)  # checkpoints
READER = Kind("Storage Blob Data Reader", COMPUTE, BLOB_CONTAINER)  # datasets
DELEGATOR = Kind("Storage Blob Delegator", COMPUTE, "Microsoft.Storage/storageAccounts")  # the key


@contextmanager
def _zone(arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    config = deployed(arm, tmp_path, run_cli, "energy", monkeypatch)
    actor = CycleCloud(arm.world, arm.proving.authorization, arm.proving.policy_log)
    assert refused(actor.start(as_identity=scheduler_identity(arm))) == []
    _, compute_subnet = ids(arm, config)
    imds = Imds(arm).start()
    try:
        yield World(
            arm, "energy", Zone(load_config(config).config), imds, Origin(compute_subnet, "203.0.113.50", "node")
        )
    finally:
        imds.stop()


def _grant(world: World, kind: Kind) -> tuple[str, str, str]:
    """(the assignment's key in the world, its account's ID, its container) for the one grant of that kind."""
    [(key, grant, _)] = world.grants(kind)
    account, _, container = scope_of(grant).partition("/blobServices/default/containers/")
    return key, account, container


def _service(front: BlobFront, token: str) -> BlobServiceClient:
    cert = front.standin.cert
    return BlobServiceClient(
        front.account_url, credential=StaticTokenCredential(token), retry_total=0, connection_verify=cert
    )


def _key(front: BlobFront, token: str) -> Any:
    now = datetime.now(UTC)
    return _service(front, token).get_user_delegation_key(now, now + timedelta(hours=2))


def _sas(key: Any, container: str, permission: str, expiry: timedelta = timedelta(hours=1)) -> str:
    return generate_container_sas(
        ACCOUNT, container, user_delegation_key=key, permission=ContainerSasPermissions.from_string(permission),
        expiry=datetime.now(UTC) + expiry,
    )  # fmt: skip


def _put(front: BlobFront, container: str, sas: str) -> tuple[int, str]:
    """A job's Put Blob with the SAS (learn.microsoft.com/rest/api/storageservices/put-blob): (status,
    x-ms-error-code)."""
    url = f"{front.account_url}/{container}/step-{uuid.uuid4()}.ckpt?{sas}"
    request = urllib.request.Request(
        url, data=b"step", headers={"x-ms-version": "2026-10-06", "x-ms-blob-type": "BlockBlob"}, method="PUT"
    )
    try:
        with urllib.request.urlopen(
            request, timeout=30, context=ssl.create_default_context(cafile=str(front.standin.cert))
        ) as answer:
            return answer.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("x-ms-error-code") or ""


def _key_or_refusal(front: BlobFront, token: str) -> Any:
    """The key, or (status, x-ms-error-code) when the service refuses it."""
    try:
        return _key(front, token)
    except HttpResponseError as exc:
        response: Any = exc.response
        return exc.status_code, response.headers.get("x-ms-error-code")


def _key_refusal(front: BlobFront, token: str) -> tuple[int | None, str | None]:
    with pytest.raises(HttpResponseError) as caught:
        _key(front, token)
    response: Any = caught.value.response  # the transport's response, with the service's headers
    return caught.value.status_code, response.headers.get("x-ms-error-code")


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_jobs_user_delegation_sas_is_judged_as_azure_judges_it(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _zone(arm, tmp_path, run_cli, monkeypatch) as world:
        writer_key, account, checkpoints = _grant(world, WRITER)
        _, datasets_account, datasets = _grant(world, READER)
        assert datasets_account.lower() == account.lower()  # one data account, two containers
        service = BlobServiceClient.from_connection_string(shared_azurite().connection_string)
        for container in (checkpoints, datasets):
            if not service.get_container_client(container).exists():
                service.create_container(container)
        front = BlobFront(arm, account, shared_azurite().account_url, world.origin, tls=True).start()
        try:
            token = world.node_token("compute", STORAGE_AUDIENCE)
            compute = arm.proving.caller("Bearer " + token)
            assert isinstance(compute, Principal)
            # The key as deployed (the render's Storage Blob Delegator at the account); without that assignment, the
            # identity's container-scoped data roles give none.
            [(delegator, _, _)] = world.grants(DELEGATOR)
            refused_without, key = world.without(delegator, lambda: _key_or_refusal(front, token))
            assert refused_without == (403, "AuthorizationPermissionMismatch")
            assert key.signed_oid == compute.object_id

            checkpoint_sas = _sas(key, checkpoints, "rcw")
            assert _put(front, checkpoints, checkpoint_sas)[0] == 201
            assert _put(front, datasets, _sas(key, datasets, "rcw")) == (403, "AuthorizationPermissionMismatch")
            assert _put(front, checkpoints, _sas(key, checkpoints, "r")) == (403, "AuthorizationPermissionMismatch")
            tampered = checkpoint_sas.replace("sp=rcw", "sp=rcwd")
            assert _put(front, checkpoints, tampered) == (403, "AuthenticationFailed")
            expired = _sas(key, checkpoints, "rcw", expiry=timedelta(minutes=-5))
            assert _put(front, checkpoints, expired) == (403, "AuthenticationFailed")

            # The network still decides first: the same SAS from a workstation outside the zone's VNet.
            outside = BlobFront(arm, account, shared_azurite().account_url, WORKSTATION, tls=True).start()
            try:
                assert _put(outside, checkpoints, checkpoint_sas) == (403, "AuthorizationFailure")
            finally:
                outside.stop()

            # The same SAS, the identity's role assignment on the container removed, then back.
            refused_without, allowed_again = world.without(writer_key, lambda: _put(front, checkpoints, checkpoint_sas))
            assert refused_without == (403, "AuthorizationPermissionMismatch")
            assert allowed_again[0] == 201

            # The locker identity holds no role on the data account (only Reader on the locker's): no key.
            assert _key_refusal(front, world.node_token(LOCKER_IDENTITY, STORAGE_AUDIENCE)) == (
                403,
                "AuthorizationPermissionMismatch",
            )
            assert arm.bugs == []
        finally:
            front.stop()
