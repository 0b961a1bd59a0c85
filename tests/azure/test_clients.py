"""The Blob client the state backend gets from the adapter: connection string first, else the adapter's credential."""

from __future__ import annotations

import pytest

from hpclz.azure.clients import BLOB_RETRY_TOTAL, StaticTokenCredential, blob_service_client

ACCOUNT = "https://sthpclzstate.blob.core.windows.net"
AZURITE = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;"
    "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
)


def test_a_connection_string_wins_over_the_account_url() -> None:
    service = blob_service_client(ACCOUNT, connection_string=AZURITE)
    assert service.url.startswith("http://127.0.0.1:10000/devstoreaccount1")
    assert service.account_name == "devstoreaccount1"
    assert service._config.retry_policy.total_retries == BLOB_RETRY_TOTAL


def test_without_one_the_account_gets_the_adapters_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCLZ_ARM_ENDPOINT", "https://127.0.0.1:1")
    monkeypatch.setenv("HPCLZ_AZURE_TOKEN", "fixed")
    service = blob_service_client(ACCOUNT, retry_total=0)
    assert service.url.startswith(ACCOUNT)
    assert isinstance(service.credential, StaticTokenCredential)
    assert service._config.retry_policy.total_retries == 0


def test_a_given_credential_is_used_as_is() -> None:
    mine = StaticTokenCredential("mine")
    assert blob_service_client(ACCOUNT, credential=mine).credential is mine
