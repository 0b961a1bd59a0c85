"""The part of Microsoft Graph v1.0 hpclz calls: a tenant's service principals and their app role assignments.

`GraphFront(standin)` listens on a loopback HTTPS port with the stand-in's certificate; hpclz reaches it through
HPCLZ_GRAPH_ENDPOINT (ArmStandIn.env()), with the same bearer tokens as ARM (the proving ground's principals).

- `GET /v1.0/servicePrincipals(appId='{appId}')`: the service principal, or 404 Request_ResourceNotFound
  ("Resource '{id}' does not exist or one of its queried reference-property objects are not present.": Graph's body
  captured for a v1.0 servicePrincipals call in EirikHaughom/ADME#5 and for a service principal read in
  Azure/azure-powershell#18179; the CLI for Microsoft 365 documents the same text for `aad user remove`,
  pnp/cli-microsoft365@9ca33b5:docs/docs/cmd/aad/user/user-remove.md, "Remarks");
- `GET /v1.0/applications(appId='{appId}')`: the app registration's `spa.redirectUris` (the one property hpclz
  selects), or the same 404; every known caller may read it, as it may read the service principal
  (learn.microsoft.com/graph/api/application-get: the same least-privileged permission, Application.Read.All);
- `GET /v1.0/servicePrincipals/{id}/appRoleAssignedTo`: the assignments, `{"value": [...]}`, `page_size` at a time
  with an absolute `@odata.nextLink` to the next page (learn.microsoft.com/graph/paging); a default member user
  may read service principals (learn.microsoft.com/entra/fundamentals/users-default-permissions, "Read all
  properties of ... enterprise applications"), so every known caller may list;
- `POST` there: only a caller holding one of the Entra roles the API accepts, or owning the service principal
  (rbac-approleassignments-apis-write.md, cited in hpclz.deploy.app_roles), else 403 Authorization_RequestDenied
  "Insufficient privileges to complete the operation." (microsoftgraph/microsoft-graph-docs#10290: this POST's
  answer); an `appRoleId` the app does not define is 400 Request_BadRequest (Graph's code for a malformed or
  incorrect request, learn.microsoft.com/graph/errors; the message text is the one third-party clients match on,
  not seen at a Microsoft source); a duplicate is 400 as well; `201 Created` with the appRoleAssignment otherwise;
- `DELETE .../appRoleAssignedTo/{id}`: the same authorization, 204, or 404 when there is none.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from tests.support.arm_standin import reach
from tests.support.arm_standin.authz import Principal
from tests.support.arm_standin.data_planes import _Front

if TYPE_CHECKING:
    from tests.support.arm_standin.server import ArmStandIn

# The least privileged Entra roles the assignment API accepts for a delegated caller (rbac-approleassignments-apis-
# write.md, microsoftgraph/microsoft-graph-docs-contrib@93d551b).
ASSIGNING_ROLES = frozenset(
    {
        "Directory Synchronization Accounts",
        "Directory Writer",
        "Hybrid Identity Administrator",
        "Identity Governance Administrator",
        "Privileged Role Administrator",
        "User Administrator",
        "Application Administrator",
        "Cloud Application Administrator",
    }
)
DENIED = ("Authorization_RequestDenied", "Insufficient privileges to complete the operation.")
# CCWS's app roles (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/entra/ccwEntraApp.bicep l.105-160).
CCWS_ROLES = ("Administrator", "SuperUser", "User", "Global.Node.User", "Global.Node.Admin")
SP = r"/v1\.0/servicePrincipals"


@dataclass
class ServicePrincipal:
    app_id: str
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    roles: dict[str, str] = field(default_factory=dict)  # value -> app role id
    owners: set[str] = field(default_factory=set)  # object IDs
    assignments: list[dict[str, Any]] = field(default_factory=list)
    # The application object beside the service principal (one app, one tenant): its Single-page application
    # redirect URIs, `spa.redirectUris` (learn.microsoft.com/graph/api/resources/spaapplication).
    spa_redirect_uris: list[str] = field(default_factory=list)
    application_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def body(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "appId": self.app_id,
            "displayName": f"CycleCloud {self.app_id[:8]}",
            "appRoles": [
                {"id": rid, "value": value, "isEnabled": True, "allowedMemberTypes": ["User", "Application"]}
                for value, rid in self.roles.items()
            ],
        }


class GraphFront(_Front):
    """A tenant's Graph: `add_app()` registers an app's service principal; `directory_roles` gives callers Entra
    roles; `log` holds every request (method, path, status) for tests to count."""

    def __init__(self, standin: ArmStandIn):
        super().__init__(standin, "", reach.WORKSTATION, tls=True)
        self.apps: dict[str, ServicePrincipal] = {}
        self.directory_roles: dict[str, set[str]] = {}
        self.log: list[tuple[str, str, int]] = []
        self.page_size = 100
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def add_app(self, app_id: str, roles: tuple[str, ...] = CCWS_ROLES) -> ServicePrincipal:
        sp = ServicePrincipal(app_id, roles={value: str(uuid.uuid4()) for value in roles})
        self.apps[app_id.lower()] = sp
        return sp

    def writes(self) -> list[tuple[str, str, int]]:
        return [entry for entry in self.log if entry[0] != "GET"]

    def answer(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        peer: str,  # noqa: ARG002 (the base class names it; Graph is public, no network rule applies)
    ) -> tuple[int, dict[str, str], bytes]:
        parts = urlsplit(path)
        route = unquote(parts.path)
        who = self.bearer_caller(headers)
        if who is None:
            status, data = 401, _error("InvalidAuthenticationToken", "Access token is empty or invalid.")
        else:
            with self._lock:
                status, data = self._route(method, route, who, json.loads(body) if body else None)
            skip = re.search(r"(?:^|&)\$skiptoken=(\d+)", unquote(parts.query))
            if status == 200 and isinstance(data, dict) and "value" in data:
                data = self._page(route, data["value"], int(skip.group(1)) if skip else 0)
        self.log.append((method, route, status))
        payload = b"" if data is None else json.dumps(data).encode()
        return status, {"Content-Type": "application/json"}, payload

    def _page(self, route: str, items: list[dict[str, Any]], start: int) -> dict[str, Any]:
        page: dict[str, Any] = {"value": items[start : start + self.page_size]}
        if start + self.page_size < len(items):
            page["@odata.nextLink"] = f"{self.url}{route}?$skiptoken={start + self.page_size}"
        return page

    def _route(self, method: str, route: str, who: Principal, body: Any) -> tuple[int, Any]:
        by_app = re.fullmatch(SP + r"\(appId='([^']+)'\)", route)
        if method == "GET" and by_app:
            sp = self.apps.get(by_app.group(1).lower())
            return (200, sp.body()) if sp else _not_found(by_app.group(1))
        application = re.fullmatch(r"/v1\.0/applications\(appId='([^']+)'\)", route)
        if method == "GET" and application:
            # `GET /applications(appId='{appId}')` (learn.microsoft.com/graph/api/application-get); with
            # `$select=spa` Graph answers the selected property (hpclz asks for nothing else).
            sp = self.apps.get(application.group(1).lower())
            if sp is None:
                return _not_found(application.group(1))
            return 200, {"id": sp.application_id, "spa": {"redirectUris": list(sp.spa_redirect_uris)}}
        listed = re.fullmatch(SP + r"/([^/]+)/appRoleAssignedTo(?:/([^/]+))?", route)
        if not listed:
            return 400, _error("BadRequest", f"Resource not found for the segment '{route.rsplit('/', 1)[-1]}'.")
        sp = next((s for s in self.apps.values() if s.id == listed.group(1)), None)
        if sp is None:
            return _not_found(listed.group(1))
        if method == "GET" and listed.group(2) is None:
            return 200, {"value": list(sp.assignments)}
        # Ownership counts for a member user only ("a native member of the tenant (member user) and an owner").
        owner = who.kind == "User" and who.object_id in sp.owners
        if not (self.directory_roles.get(who.object_id, set()) & ASSIGNING_ROLES or owner):
            return 403, _error(*DENIED)
        if method == "POST" and listed.group(2) is None:
            return self._post(sp, body or {})
        if method == "DELETE" and listed.group(2) is not None:
            kept = [a for a in sp.assignments if a["id"] != listed.group(2)]
            if len(kept) == len(sp.assignments):
                return _not_found(listed.group(2))
            sp.assignments = kept
            return 204, None
        return 405, _error("Request_BadRequest", f"{method} is not supported here.")

    def _post(self, sp: ServicePrincipal, body: dict[str, Any]) -> tuple[int, Any]:
        if body.get("resourceId") != sp.id or str(body.get("appRoleId")) not in sp.roles.values():
            return 400, _error("Request_BadRequest", "Permission being assigned was not found on application.")
        key = (body.get("principalId"), body.get("appRoleId"))
        if any((a["principalId"], a["appRoleId"]) == key for a in sp.assignments):
            return 400, _error("Request_BadRequest", "Permission being assigned already exists on the object.")
        made = self.assignment(sp, str(body.get("principalId")), str(body["appRoleId"]))
        return 201, made

    def assignment(self, sp: ServicePrincipal, principal_id: str, app_role_id: str) -> dict[str, Any]:
        """An assignment as Graph stores it (also how a test makes one 'by hand', outside hpclz)."""
        made = {
            # Graph's assignment IDs are 43-character base64url strings (serviceprincipal-post-approleassignedto).
            "id": base64.urlsafe_b64encode(uuid.uuid4().bytes + uuid.uuid4().bytes[:16]).decode().rstrip("="),
            "appRoleId": app_role_id,
            "createdDateTime": datetime.now(UTC).isoformat(),
            "principalId": principal_id,
            "principalType": "Group",
            "resourceId": sp.id,
        }
        sp.assignments.append(made)
        return made


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def _not_found(key: str) -> tuple[int, Any]:
    message = f"Resource '{key}' does not exist or one of its queried reference-property objects are not present."
    return 404, _error("Request_ResourceNotFound", message)
