"""Microsoft Graph v1.0, the little hpclz asks of it: a service principal's app roles and their assignments, and the
app registration's Single-page application redirect URIs (read only).

An app role assignment is a Graph object, outside ARM, so it goes through an azure-core pipeline of its own, with the
credential every ARM client gets (token scope: `AzureSettings.graph_scope`). Shapes, from the v1.0 reference:

- servicePrincipal, `GET /servicePrincipals(appId='{appId}')` (learn.microsoft.com/graph/api/serviceprincipal-get:
  "You can address the service principal using either its id or appId"); its `appRoles` carry `id` and `value`
  (learn.microsoft.com/graph/api/resources/approle);
- application, `GET /applications(appId='{appId}')?$select=spa` (learn.microsoft.com/graph/api/application-get: "You
  can address the application using either its id or appId"; the same least-privileged permission,
  Application.Read.All, as the service principal's read); `spa.redirectUris`
  (learn.microsoft.com/graph/api/resources/spaapplication);
- `GET /servicePrincipals/{id}/appRoleAssignedTo` (serviceprincipal-list-approleassignedto): a collection, `value`,
  paged by `@odata.nextLink` (learn.microsoft.com/graph/paging);
- `POST /servicePrincipals/{id}/appRoleAssignedTo` with `principalId`, `resourceId`, `appRoleId` -> `201 Created` and
  the appRoleAssignment (serviceprincipal-post-approleassignedto);
- `DELETE /servicePrincipals/{id}/appRoleAssignedTo/{appRoleAssignment-id}` -> `204 No Content`
  (serviceprincipal-delete-approleassignedto).

A refusal is Graph's error body, `{"error": {"code": "Authorization_RequestDenied", "message": "Insufficient privileges
to complete the operation."}}` (as captured in microsoftgraph/microsoft-graph-docs#10290 for this very POST); an
unknown object is 404 `Request_ResourceNotFound`, "Resource '<id>' does not exist or one of its queried
reference-property objects are not present." (captured for a v1.0 servicePrincipals call in EirikHaughom/ADME#5, and
for a service principal read in Azure/azure-powershell#18179).
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from functools import cached_property
from typing import Any

from hpclz.azure.settings import AzureSettings

log = logging.getLogger(__name__)
VERSION = "v1.0"


class GraphError(Exception):
    """A Graph call that did not succeed: HTTP status (0: never answered), Graph's error code and message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message

    def one_line(self) -> str:
        return f"{self.code}: {self.message}" if self.status else self.message

    @property
    def refused(self) -> bool:
        return self.status == 403 or self.code == "Authorization_RequestDenied"


def _quoted(key: str) -> str:
    return urllib.parse.quote(key, safe="")


class Graph:
    """Graph reached with `settings` (endpoint, CA bundle, retries) and `credential` (the deploy's)."""

    def __init__(self, settings: AzureSettings, credential: Any):
        self.settings = settings
        self.credential = credential

    @cached_property
    def _client(self) -> Any:
        from azure.core import PipelineClient
        from azure.core.pipeline.policies import (
            BearerTokenCredentialPolicy,
            CustomHookPolicy,
            HeadersPolicy,
            HttpLoggingPolicy,
            RetryPolicy,
            UserAgentPolicy,
        )
        from azure.core.pipeline.transport import RequestsTransport

        s = self.settings
        policies = [
            HeadersPolicy({"Accept": "application/json"}),
            UserAgentPolicy("hpclz"),
            # Graph throttles with 429 and Retry-After (learn.microsoft.com/graph/throttling); RetryPolicy honours both.
            RetryPolicy(retry_total=s.retry_total, retry_backoff_factor=s.retry_backoff),
            BearerTokenCredentialPolicy(self.credential, s.graph_scope),
            CustomHookPolicy(raw_response_hook=_log_call),
            HttpLoggingPolicy(),  # `-vv` only (azure.core's logger); it redacts the Authorization header
        ]
        transport = RequestsTransport(connection_verify=s.ca_bundle or True)
        return PipelineClient(s.graph_url, policies=policies, transport=transport)

    def _send(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        from azure.core.exceptions import AzureError
        from azure.core.rest import HttpRequest

        url = path if path.startswith("https://") else f"{self.settings.graph_url}/{VERSION}{path}"
        request = HttpRequest(method, url, json=body) if body is not None else HttpRequest(method, url)
        try:
            response = self._client.send_request(request)
        except AzureError as exc:  # no answer at all (DNS, TLS, connection refused, a token that cannot be had)
            raise GraphError(0, type(exc).__name__, f"Microsoft Graph at {self.settings.graph_url}: {exc}") from None
        text = response.text() if response.content else ""
        data = _json(text)
        if response.status_code >= 400:
            error = data.get("error") if isinstance(data, dict) else None
            error = error if isinstance(error, dict) else {}
            raise GraphError(
                response.status_code,
                str(error.get("code") or f"HTTP {response.status_code}"),
                str(error.get("message") or text[:200] or "no message"),
            )
        return response.status_code, data

    def _found(self, path: str) -> dict[str, Any] | None:
        """The object at `path`, None when Graph answers 404 (the tenant has no such object)."""
        try:
            _, data = self._send("GET", path)
        except GraphError as exc:
            if exc.status == 404:
                return None
            raise
        return data if isinstance(data, dict) else None

    def service_principal(self, app_id: str) -> dict[str, Any] | None:
        """The app's service principal in this tenant, None when the tenant has none for `app_id`."""
        return self._found(f"/servicePrincipals(appId='{_quoted(app_id)}')")

    def spa_redirect_uris(self, app_id: str) -> list[str] | None:
        """The app registration's Single-page application redirect URIs, None when the tenant has no such app."""
        data = self._found(f"/applications(appId='{_quoted(app_id)}')?$select=spa")
        if data is None:
            return None
        spa = data.get("spa")
        uris = spa.get("redirectUris") if isinstance(spa, dict) else None
        return [u for u in uris if isinstance(u, str)] if isinstance(uris, list) else []

    def assigned_to(self, service_principal_id: str) -> list[dict[str, Any]]:
        """Every app role assignment granted for the service principal's app roles, all pages."""
        found: list[dict[str, Any]] = []
        next_url: str | None = f"/servicePrincipals/{_quoted(service_principal_id)}/appRoleAssignedTo"
        while next_url:
            _, data = self._send("GET", next_url)
            page = data if isinstance(data, dict) else {}
            found += [item for item in page.get("value") or [] if isinstance(item, dict)]
            link = page.get("@odata.nextLink")
            next_url = link if isinstance(link, str) and link.startswith(self.settings.graph_url) else None
        return found

    def assign(self, service_principal_id: str, principal_id: str, app_role_id: str) -> dict[str, Any]:
        body = {"principalId": principal_id, "resourceId": service_principal_id, "appRoleId": app_role_id}
        _, data = self._send("POST", f"/servicePrincipals/{_quoted(service_principal_id)}/appRoleAssignedTo", body)
        return data if isinstance(data, dict) else {}

    def unassign(self, service_principal_id: str, assignment_id: str) -> bool:
        """Delete one assignment; False when Graph no longer has it."""
        path = f"/servicePrincipals/{_quoted(service_principal_id)}/appRoleAssignedTo/{_quoted(assignment_id)}"
        try:
            self._send("DELETE", path)
        except GraphError as exc:
            if exc.status == 404:
                return False
            raise
        return True


def _json(text: str) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _log_call(response: Any) -> None:
    """Each Graph call as a log line (`-v`): method, path and status; never a body or the token."""
    request, http = response.http_request, response.http_response
    log.info("%s %s -> %s", request.method, urllib.parse.urlsplit(request.url).path, http.status_code)
