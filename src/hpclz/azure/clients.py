"""Credential and client factory: every Azure SDK client hpclz uses is built here, the same way."""

from __future__ import annotations

import logging
import threading
import time
import urllib.parse
from collections.abc import Callable
from functools import cached_property
from typing import Any

from hpclz.azure.settings import AzureSettings, settings_from_env
from hpclz.errors import ExitCode, HpclzError

BLOB_RETRY_TOTAL = 3
log = logging.getLogger(__name__)


def log_call(response: Any) -> None:
    """Each ARM call as hpclz's own log line (`-v`): method, path and status, never the query (it may carry a
    signature) or a body. The SDK calls it for every attempt (azure-core CustomHookPolicy `raw_response_hook`,
    which the management clients place after the retry policy: azure/mgmt/compute/_client.py `_policies`)."""
    request, http = response.http_request, response.http_response
    log.info("%s %s -> %s", request.method, urllib.parse.urlsplit(request.url).path, http.status_code)


class StaticTokenCredential:
    """An azure.core TokenCredential returning one fixed token: for a custom ARM endpoint (tests) only."""

    def __init__(self, token: str):
        self._token = token

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken(self._token, int(time.time()) + 3600)


def make_credential(settings: AzureSettings) -> Any:
    if settings.static_token:
        return StaticTokenCredential(settings.static_token)
    from azure.identity import DefaultAzureCredential

    # The authority decides which cloud's Entra ID issues the token (public, US Gov, China).
    return DefaultAzureCredential(authority=settings.cloud.authority)


class AzureClients:
    """Builds each SDK client once, with the endpoint, TLS trust, retries and polling of `settings`."""

    def __init__(self, subscription_id: str, settings: AzureSettings | None = None, credential: Any = None):
        self.subscription_id = subscription_id
        self.settings = settings or settings_from_env()
        self.credential = credential or make_credential(self.settings)
        # Set to stop every wait between retries at once (Ctrl-C); on_wait hears the countdown.
        self.cancel = threading.Event()
        self.on_wait: Callable[[str], None] = lambda _message: None

    def _options(self) -> dict[str, Any]:
        from hpclz.azure.waiting import BoundedRetryPolicy

        s = self.settings
        retry = BoundedRetryPolicy(
            cancel=self.cancel,
            on_wait=lambda message: self.on_wait(message),
            cap=s.retry_after_cap,
            retry_total=s.retry_total,
            retry_backoff_factor=s.retry_backoff,
        )
        options: dict[str, Any] = {
            "base_url": s.arm_endpoint,
            "credential_scopes": [s.cloud.scope],
            "retry_policy": retry,
            "polling_interval": s.poll_interval,
            "raw_response_hook": log_call,
        }
        if s.ca_bundle:
            options["connection_verify"] = s.ca_bundle
        return options

    @cached_property
    def deployments(self) -> Any:
        from azure.mgmt.resource.deployments import DeploymentsMgmtClient

        return DeploymentsMgmtClient(self.credential, self.subscription_id, **self._options())

    @cached_property
    def resources(self) -> Any:
        from azure.mgmt.resource.resources import ResourceManagementClient

        return ResourceManagementClient(self.credential, self.subscription_id, **self._options())

    @cached_property
    def network(self) -> Any:
        from azure.mgmt.network import NetworkManagementClient

        return NetworkManagementClient(self.credential, self.subscription_id, **self._options())

    @cached_property
    def compute(self) -> Any:
        from azure.mgmt.compute import ComputeManagementClient

        return ComputeManagementClient(self.credential, self.subscription_id, **self._options())


def blob_service_client(
    account_url: str,
    *,
    connection_string: str | None = None,
    credential: Any = None,
    retry_total: int = BLOB_RETRY_TOTAL,
) -> Any:
    """A BlobServiceClient: from `connection_string` when given (Azurite, an account key), else for
    `account_url` with `credential`, or the credential every other client gets when None."""
    from azure.storage.blob import BlobServiceClient, ExponentialRetry

    # The SDK's default backoff (15 s, then x3) makes an unreachable account look like a hang.
    retry = ExponentialRetry(initial_backoff=2, increment_base=2, retry_total=retry_total)
    if connection_string:
        return BlobServiceClient.from_connection_string(connection_string, retry_policy=retry)
    if credential is None:
        credential = make_credential(settings_from_env())
    return BlobServiceClient(account_url, credential=credential, retry_policy=retry)


def resolve_subscription(configured: str | None) -> str:
    if not configured:
        raise HpclzError(
            "no Azure subscription: set metadata.subscription_id in the config or AZURE_SUBSCRIPTION_ID",
            exit_code=ExitCode.USAGE,
        )
    return configured
