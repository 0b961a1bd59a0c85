"""The stand-in's Managed Lustre HSM check (tests/support/arm_standin/managed_lustre.py): creating a file system
linked to a blob container needs the tenant's HPC Cache Resource Provider to hold Storage Account Contributor and
Storage Blob Data Contributor on the account (MicrosoftDocs/azure-stack-docs@f1e86c5c94e6ff51da9c97c87bc5084b963f3a8d:
azure-managed-lustre/amlfs-prerequisites.md, "Access roles for blob integration"), judged with the real role JSONs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.arm_standin.authz import Authorization
from tests.support.arm_standin.managed_lustre import CODE, hsm_access_refusal

SUB = "/subscriptions/00000000-0000-0000-0000-00000000c0de"
ACCOUNT = SUB + "/resourceGroups/rg1/providers/Microsoft.Storage/storageAccounts/st1"
CONTAINERS = ACCOUNT + "/blobServices/default/containers/"
RP = "6a2f3d1c-8b4e-4f0a-9c7d-2e5b1a8f4c30"
ROLES = ("Storage Account Contributor", "Storage Blob Data Contributor")


def amlfs(hsm: bool = True) -> dict[str, Any]:
    settings = {"container": CONTAINERS + "data", "loggingContainer": CONTAINERS + "logs", "importPrefix": "/"}
    return {
        "id": SUB + "/resourceGroups/rg1/providers/Microsoft.StorageCache/amlFilesystems/fs1",
        "type": "Microsoft.StorageCache/amlFilesystems",
        "properties": {"storageCapacityTiB": 8, **({"hsm": {"settings": settings}} if hsm else {})},
    }


def authorization(*roles: str, scope: str = ACCOUNT, who: str = RP) -> Authorization:
    authz = Authorization()
    for role in roles:
        authz.grant(who, role, scope)
    return authz


def test_creation_goes_through_with_both_roles_on_the_account() -> None:
    assert hsm_access_refusal(authorization(*ROLES), {}, RP, amlfs()) is None


@pytest.mark.parametrize("held", ROLES)
def test_creation_fails_without_either_role(held: str) -> None:
    refusal = hsm_access_refusal(authorization(held), {}, RP, amlfs())
    assert refusal is not None and refusal.code == CODE
    # What is missing is the other role's part: keys (Storage Account Contributor) or blobs (Blob Data Contributor).
    assert ("listkeys" in refusal.message) == (held == "Storage Blob Data Contributor")
    assert ("blobs/write" in refusal.message) == (held == "Storage Account Contributor")


def test_the_roles_must_be_the_resource_providers() -> None:
    refusal = hsm_access_refusal(authorization(*ROLES, who="someone-else"), {}, RP, amlfs())
    assert refusal is not None and refusal.code == CODE


def test_roles_on_the_data_container_alone_miss_the_keys_and_the_logs() -> None:
    refusal = hsm_access_refusal(authorization(*ROLES, scope=CONTAINERS + "data"), {}, RP, amlfs())
    assert refusal is not None
    assert "listkeys" in refusal.message and "containers/logs" in refusal.message


def test_a_file_system_without_hsm_an_update_or_an_unknown_provider_is_not_judged() -> None:
    none = authorization()
    assert hsm_access_refusal(none, {}, RP, amlfs(hsm=False)) is None
    assert hsm_access_refusal(none, {amlfs()["id"].lower(): amlfs()}, RP, amlfs()) is None
    assert hsm_access_refusal(none, {}, None, amlfs()) is None
