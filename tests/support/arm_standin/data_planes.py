"""The data planes of the stand-in's storage accounts and key vaults, each behind its network (reach.py).

A front is one caller's way in: `BlobFront(standin, account_id, upstream, origin)` listens on a loopback port of its
own and is the route `origin` takes to that account's Blob endpoint; it answers as Azure Storage does when the
network refuses the call and otherwise passes the request to Azurite (`upstream`, the emulator's account URL), so
the real storage SDK talks to a real Blob service. `VaultFront(standin, vault_id, origin)` is the same for a key
vault's secrets, answered by the front itself (Key Vault's REST API, secrets get and set) after the firewall and
then Azure RBAC (the proving ground's role assignments, data actions). The account or vault is the world's resource
as deployments left it, read on every call: a later deployment that changes its network settings changes the answer.
"""

from __future__ import annotations

import hmac
import http.client
import json
import re
import ssl
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import unquote, urlsplit
from xml.sax.saxutils import escape

from tests.support.arm_standin import reach, user_delegation
from tests.support.arm_standin.authz import Principal
from tests.support.arm_standin.world import TENANT

if TYPE_CHECKING:
    from tests.support.arm_standin.server import ArmStandIn

# The services' refusals (reach.REFUSALS, with their sources). Blob's code travels in x-ms-error-code and the XML body
# (learn.microsoft.com/rest/api/storageservices/status-and-error-codes2, "Error response"). Key Vault's message goes
# on with the client address, caller and vault, as in github.com/MicrosoftDocs/azure-devops-docs/issues/8581.
BLOB_REFUSAL = reach.REFUSALS["blob"]
VAULT_FIREWALL = reach.REFUSALS["vault"][1]
# Key Vault data actions (learn.microsoft.com/azure/role-based-access-control/permissions/security, Microsoft.KeyVault
# DataActions).
GET_SECRET = "Microsoft.KeyVault/vaults/secrets/getSecret/action"
SET_SECRET = "Microsoft.KeyVault/vaults/secrets/setSecret/action"
BLOB_READ = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"
BLOB_WRITE = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write"
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class _Front:
    def bearer_caller(self, headers: dict[str, str]) -> Principal | None:
        """The principal whose token the request's Authorization header carries, or None without one."""
        auth = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
        return self.standin.proving.caller(auth)

    def __init__(self, standin: ArmStandIn, target_id: str, origin: reach.Origin, tls: bool):
        self.standin = standin
        self.target_id = target_id
        self.origin = origin
        self.refused: list[str] = []  # what the network turned away, for tests to read
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(standin.cert, standin.key)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.scheme = "https" if tls else "http"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> Self:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def target(self) -> dict[str, Any]:
        found = self.standin.world.resources.get(self.target_id.lower())
        if found is None:
            raise LookupError(f"no resource {self.target_id} in the stand-in's world")
        return found

    def network_refusal(self, group: str, peer: str) -> str | None:
        why = reach.refusal(self.target(), group, self.origin, peer, self.standin.world.resources)
        if why is not None:
            self.refused.append(why)
        return why

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: ARG002 (the base class names it)
                return

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    status, headers, data = front.answer(
                        self.command, self.path, dict(self.headers), body, self.client_address[0]
                    )
                except Exception as exc:  # a stand-in bug shows as a 500 and fails the test, never a hang
                    front.standin.bugs.append(repr(exc))
                    status, headers, data = 500, {}, repr(exc).encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if data and self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _handle

        return Handler

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes, peer: str
    ) -> tuple[int, dict[str, str], bytes]:
        raise NotImplementedError


class BlobFront(_Front):
    """`origin`'s route to a storage account's Blob endpoint, in front of Azurite's account at `upstream`."""

    def __init__(
        self,
        standin: ArmStandIn,
        account_id: str,
        upstream: str,
        origin: reach.Origin = reach.WORKSTATION,
        tls: bool = False,
    ):
        # tls: HTTPS with the stand-in's certificate, for the storage SDK's token credentials ("Token credential is
        # only supported with HTTPS", azure-storage-blob's base client).
        super().__init__(standin, account_id, origin, tls=tls)
        self.upstream = urlsplit(upstream)

    @property
    def account_url(self) -> str:
        """The account's Blob endpoint as this caller sees it (Azurite's path-style URL: /<account>)."""
        return f"{self.scheme}://127.0.0.1:{self.port}{self.upstream.path}"

    def connection_string(self, account: str, key: str) -> str:
        return f"DefaultEndpointsProtocol={self.scheme};AccountName={account};AccountKey={key};BlobEndpoint={self.account_url};"

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes, peer: str
    ) -> tuple[int, dict[str, str], bytes]:
        if self.network_refusal("blob", peer) is not None:
            return _blob_refusal()
        auth = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        query = user_delegation.sas_query(path)
        if user_delegation.is_key_request(method, query):
            return self._delegation_key(auth, headers, body)
        if not auth and user_delegation.is_user_delegation_sas(query):
            try:
                self._delegated(method, path, query)
            except user_delegation.Refused as refusal:
                self.refused.append(f"user delegation SAS: {refusal.code}")
                return _storage_error(refusal.status, refusal.code, refusal.message, refusal.extra)
            path = self._signed(user_delegation.without_sas(path))
        elif auth.startswith("Bearer "):
            refused = self._entra(method, path, auth)
            if refused is not None:
                return refused
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            path = self._signed(path)
        connection = http.client.HTTPConnection(self.upstream.hostname or "127.0.0.1", self.upstream.port, timeout=60)
        try:
            forwarded = {k: v for k, v in headers.items() if k.lower() not in HOP_HEADERS}
            connection.request(method, path, body=body or None, headers={**forwarded, "Content-Length": str(len(body))})
            response = connection.getresponse()
            data = response.read()
            back = {k: v for k, v in response.getheaders() if k.lower() not in HOP_HEADERS}
            return response.status, back, data
        finally:
            connection.close()

    def _blob(self, path: str) -> tuple[str, str]:
        """(container, blob) of a path-style request (/<account>/<container>/<blob>)."""
        rest = urlsplit(path).path[len(self.upstream.path) :].lstrip("/")
        container, _, blob = rest.partition("/")
        return container, unquote(blob)

    def _entra(self, method: str, path: str, auth: str) -> tuple[int, dict[str, str], bytes] | None:
        """A bearer token: the stand-in's principal and its data actions on the blob (Azure RBAC: Storage Blob Data
        Reader/Contributor; learn.microsoft.com/azure/role-based-access-control/permissions/storage). Refusals as
        Blob storage answers them (learn.microsoft.com/rest/api/storageservices/blob-service-error-codes): an unknown
        token 401 InvalidAuthenticationInfo, a missing data action 403 AuthorizationPermissionMismatch, "This request
        is not authorized to perform this operation using this permission." """
        who = self.standin.proving.caller(auth)
        if who is None:
            return _storage_error(401, "InvalidAuthenticationInfo", "Server failed to authenticate the request.")
        container, blob = self._blob(path)
        action = BLOB_READ if method in ("GET", "HEAD") else BLOB_WRITE
        scope = f"{self.target_id}/blobServices/default/containers/{container}/blobs/{blob}"
        if not self.standin.proving.authorization.allowed(who, action, scope, self.standin.world.resources, data=True):
            self.refused.append(f"{who.name}: no {action}")
            message = "This request is not authorized to perform this operation using this permission."
            return _storage_error(403, "AuthorizationPermissionMismatch", message)
        return None

    def _delegation_key(self, auth: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Get User Delegation Key (user_delegation.py). Without a bearer token: "Only authorization with Microsoft
        Entra ID is supported" (get-user-delegation-key, "Request headers"), a Shared Key call answered 403
        AuthenticationFailed (github.com/Azure/azure-sdk-for-net/issues/12052). A caller without the action at the
        account or above: Blob storage's RBAC refusal, 403 AuthorizationPermissionMismatch (blob-service-error-codes;
        no stored capture shows this operation's own refusal)."""
        if not auth.startswith("Bearer "):
            return _storage_error(403, *user_delegation.AUTHENTICATION_FAILED)
        who = self.standin.proving.caller(auth)
        if who is None:
            return _storage_error(401, "InvalidAuthenticationInfo", "Server failed to authenticate the request.")
        resources = self.standin.world.resources
        if not self.standin.proving.authorization.allowed(who, user_delegation.GENERATE_KEY, self.target_id, resources):
            self.refused.append(f"{who.name}: no {user_delegation.GENERATE_KEY}")
            return _storage_error(403, *user_delegation.PERMISSION_MISMATCH)
        try:
            start, expiry = user_delegation.key_info(body, datetime.now(UTC))
        except user_delegation.Refused as refusal:
            return _storage_error(refusal.status, refusal.code, refusal.message, refusal.extra)
        version = next((v for k, v in headers.items() if k.lower() == "x-ms-version"), "")
        keys = self.standin.proving.delegation_keys
        key = keys.issue(self.target_id, who.object_id, TENANT, start, expiry, version)
        answer_headers = {"Content-Type": "application/xml", "x-ms-version": version, "Date": formatdate(usegmt=True)}
        return 200, answer_headers, user_delegation.key_xml(key)

    def _delegated(self, method: str, path: str, query: dict[str, str]) -> None:
        """A user delegation SAS, judged in Azure's order (user_delegation.py): the key it names, its signature, its
        times and the key's, then the operation against sp and, at use time, the key's principal's data action on the
        blob. Raises user_delegation.Refused."""
        ud = user_delegation
        keys = self.standin.proving.delegation_keys.find(self.target_id, query)
        if not keys:
            raise ud.Refused(
                403,
                ud.AUTHENTICATION_FAILED,
                {"AuthenticationErrorDetail": "Signature validation failed. Signature key not found."},
            )
        container, blob = self._blob(path)
        text = ud.string_to_sign(query, self.upstream.path.strip("/"), container, blob)
        key = next((k for k in keys if hmac.compare_digest(ud.signature(k.value, text), query["sig"])), None)
        if key is None:
            detail = "Signature did not match. String to sign used was " + text
            raise ud.Refused(403, ud.AUTHENTICATION_FAILED, {"AuthenticationErrorDetail": detail})
        ud.check_times(query, key, datetime.now(UTC))
        letters, action = ud.permission_needed(method, query)
        if not any(letter in query.get("sp", "") for letter in letters):
            raise ud.Refused(403, ud.PERMISSION_MISMATCH)
        who = self.standin.proving.by_object_id(key.oid)
        scope = f"{self.target_id}/blobServices/default/containers/{container}/blobs/{blob}"
        if not self.standin.proving.authorization.allowed(who, action, scope, self.standin.world.resources, data=True):
            self.refused.append(f"{who.name or who.object_id}: no {action} (user delegation SAS)")
            raise ud.Refused(403, ud.PERMISSION_MISMATCH)

    def _signed(self, path: str) -> str:
        """The authorized call as Azurite takes it: a container SAS of the emulator's account key in place of the
        token (Azurite checks no bearer token over HTTP)."""
        from azure.storage.blob import ContainerSasPermissions, generate_container_sas

        from tests.support.azurite import ACCOUNT, ACCOUNT_KEY

        container, _ = self._blob(path)
        permission = ContainerSasPermissions(read=True, write=True, create=True, add=True)
        expiry = datetime.now(UTC) + timedelta(hours=1)
        sas = generate_container_sas(ACCOUNT, container, account_key=ACCOUNT_KEY, permission=permission, expiry=expiry)
        return path + ("&" if "?" in path else "?") + sas


class VmBlobRoutes:
    """The VMs' way to the accounts behind `fronts`: a blob URI on one of those fronts (as hpclz hands the Run Command
    agent its output blob URIs) becomes the same URI on a front that is the VM's route to that account, from the subnet
    of the VM's NIC (`reach.vm_subnet`) and a public address of its own. Set `standin.compute.blob_route = route`."""

    VM_EGRESS = "203.0.113.50"  # a documentation address: the VM's outbound public address, in no rule of its own

    def __init__(self, standin: ArmStandIn, fronts: list[BlobFront]):
        self.standin = standin
        self.fronts = fronts
        self.made: dict[tuple[str, str | None], BlobFront] = {}
        self.lock = threading.Lock()

    def route(self, vm: dict[str, Any], uri: str) -> str:
        parts = urlsplit(uri)
        front = next((f for f in self.fronts if f.port == parts.port), None)
        if front is None:
            return uri
        subnet = reach.vm_subnet(vm, self.standin.world.resources)
        with self.lock:
            key = (front.target_id, subnet)
            if key not in self.made:
                origin = reach.Origin(subnet=subnet, address=self.VM_EGRESS, name=str(vm.get("name", "")))
                upstream = f"{front.upstream.scheme}://{front.upstream.netloc}{front.upstream.path}"
                self.made[key] = BlobFront(self.standin, front.target_id, upstream, origin).start()
            mine = self.made[key]
        return parts._replace(netloc=f"127.0.0.1:{mine.port}").geturl()

    def stop(self) -> None:
        for front in self.made.values():
            front.stop()


def _blob_refusal() -> tuple[int, dict[str, str], bytes]:
    return _storage_error(403, *BLOB_REFUSAL)


def _storage_error(
    status: int, code: str, message: str, extra: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """Blob storage's error: the code in x-ms-error-code and the XML body, which may carry more elements after the
    message (AuthenticationErrorDetail, XmlNodeName: status-and-error-codes2, "Error response")."""
    request_id = str(uuid.uuid4())
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f0Z")
    more = "".join(f"<{k}>{escape(v)}</{k}>" for k, v in (extra or {}).items())
    xml = (
        '<?xml version="1.0" encoding="utf-8"?><Error>'
        f"<Code>{code}</Code><Message>{message}\nRequestId:{request_id}\nTime:{stamp}</Message>{more}</Error>"
    )
    headers = {
        "Content-Type": "application/xml",
        "x-ms-error-code": code,
        "x-ms-request-id": request_id,
        "Date": formatdate(usegmt=True),
    }
    return status, headers, xml.encode()


class VaultFront(_Front):
    """`origin`'s route to a key vault's secrets (Key Vault REST API 7.x: Set Secret, Get Secret). Bearer tokens are
    the stand-in's principals; Key Vault first challenges an unauthenticated call (401 with the tenant and resource
    its client then asks a token for: learn.microsoft.com/azure/key-vault/general/authentication-requests-and-responses,
    "Authentication")."""

    def __init__(self, standin: ArmStandIn, vault_id: str, origin: reach.Origin = reach.WORKSTATION):
        super().__init__(standin, vault_id, origin, tls=True)
        self.secrets: dict[str, list[tuple[str, str]]] = {}  # name -> [(version, value)], newest last
        self.lock = threading.Lock()

    @property
    def vault_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes, peer: str
    ) -> tuple[int, dict[str, str], bytes]:
        status, extra, data = self._answer(method, path, headers, body, peer)
        return status, {"Content-Type": "application/json; charset=utf-8", **extra}, data

    def _answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes, peer: str
    ) -> tuple[int, dict[str, str], bytes]:
        auth = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
        if auth is None:
            challenge = (
                f'Bearer authorization="https://login.microsoftonline.com/{uuid.UUID(int=0)}", '
                'resource="https://vault.azure.net"'
            )
            return (
                401,
                {"WWW-Authenticate": challenge},
                _json(
                    {
                        "error": {
                            "code": "Unauthorized",
                            "message": "AKV10000: Request is missing a Bearer or PoP token.",
                        }
                    }
                ),
            )
        who = self.standin.proving.caller(auth)
        if who is None:
            return 401, {}, _json({"error": {"code": "Unauthorized", "message": "AKV10022: Invalid audience."}})
        parts = [p for p in urlsplit(path).path.split("/") if p]
        if len(parts) < 2 or parts[0] != "secrets" or method not in ("GET", "PUT"):
            return (
                400,
                {},
                _json({"error": {"code": "BadParameter", "message": f"{method} {path} is not a secrets call"}}),
            )
        if self.network_refusal("vault", peer) is not None:
            return 403, {}, _json(self._firewall_error(peer, who.object_id))
        name, action = parts[1], (SET_SECRET if method == "PUT" else GET_SECRET)
        scope = f"{self.target_id}/secrets/{name}"
        if not self.standin.proving.authorization.allowed(who, action, scope, self.standin.world.resources, data=True):
            return 403, {}, _json(self._rbac_error(who.object_id, action, scope))
        if method == "PUT":
            return 200, {}, _json(self._set(name, str(json.loads(body or b"{}").get("value", ""))))
        return self._get(name, parts[2] if len(parts) > 2 else None)

    def _firewall_error(self, peer: str, caller: str) -> dict[str, Any]:
        address = self.origin.address or peer
        vault = self.target()
        message = (
            f"{VAULT_FIREWALL}\r\nClient address: {address}\r\nCaller: oid={caller}\r\n"
            f"Vault: {vault['name']};location={vault.get('location', '')}"
        )
        return {"error": {"code": "Forbidden", "message": message, "innererror": {"code": "ForbiddenByFirewall"}}}

    @staticmethod
    def _rbac_error(caller: str, action: str, scope: str) -> dict[str, Any]:
        """Inner error ForbiddenByRbac (learn.microsoft.com/azure/key-vault/general/common-error-codes), message
        "Caller is not authorized to perform action on resource.", then the caller, the action (e.g. "Action:
        'Microsoft.KeyVault/vaults/secrets/setSecret/action'") and the resource, as Key Vault's refusals are quoted
        in public deployment reports."""
        message = (
            "Caller is not authorized to perform action on resource.\r\nIf role assignments, deny assignments or role "
            "definitions were changed recently, please observe propagation time.\r\n"
            f"Caller: oid={caller}\r\nAction: '{action}'\r\nResource: '{scope.lower()}'\r\nAssignment: (not found)"
        )
        return {"error": {"code": "Forbidden", "message": message, "innererror": {"code": "ForbiddenByRbac"}}}

    def _bundle(self, name: str, version: str, value: str) -> dict[str, Any]:
        now = int(time.time())
        return {
            "value": value,
            "id": f"{self.vault_url}/secrets/{name}/{version}",
            "attributes": {"enabled": True, "created": now, "updated": now, "recoveryLevel": "Recoverable+Purgeable"},
        }

    def _set(self, name: str, value: str) -> dict[str, Any]:
        version = uuid.uuid4().hex
        with self.lock:
            self.secrets.setdefault(name, []).append((version, value))
        return self._bundle(name, version, value)

    def _get(self, name: str, version: str | None) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            versions = self.secrets.get(name, [])
            found = [v for v in versions if version is None or v[0] == version]
        if not found:
            # Key Vault's answer for a missing secret: 404 SecretNotFound (Get Secret, REST API reference examples).
            message = f"A secret with (name/id) {name} was not found in this key vault."
            return 404, {}, _json({"error": {"code": "SecretNotFound", "message": message}})
        return 200, {}, _json(self._bundle(name, *found[-1]))


def _json(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


# Azure Managed Grafana: the Grafana Admin role's one data action (data/builtin_roles.json, from MicrosoftDocs/azure-docs
# @03e5750af10b23b5ba437d5b333ec5e9437844f9:articles/role-based-access-control/built-in-roles/monitor.md).
ACT_AS_GRAFANA_ADMIN = "Microsoft.Dashboard/grafana/ActAsGrafanaAdmin/action"
# What a signed-in user with no Grafana role gets: an error page "No Roles Assigned" (MicrosoftDocs/azure-docs@
# 464821f6c61a7a7a5d3835f57ae810fe75643c55:articles/managed-grafana/troubleshoot-managed-grafana.md, "Solution 3: fix
# access role issues"; "To access the Grafana user interface, users must possess one of these roles":
# learn.microsoft.com/azure/managed-grafana/concept-role-based-access-control).
NO_ROLES_ASSIGNED = "No Roles Assigned"


class GrafanaFront(_Front):
    """`origin`'s way to an Azure Managed Grafana instance's endpoint, answered by the front: a caller signs in with
    their Entra ID token, and the Grafana role they act as is the one their Azure role assignments on the instance
    give (the Grafana roles table in concept-role-based-access-control: Grafana Admin performs all Grafana
    operations). The stand-in holds the JSON of Grafana Admin only: a caller whose other Grafana role assignment
    would decide is not judged (authz.UnknownRole, a 500 that fails the test). No role: the "No Roles Assigned" page,
    with a 403 status of the stand-in's choosing (the documentation shows the page, not its status). Signed in as
    Admin, Grafana's HTTP API answers `GET /api/org/users`, "Accessible to users with org admin role", with the
    organization's users and their roles, in the shape of its example response (grafana.com/docs/http_api/org/, "Get
    all users within the current organization"). Grafana's network access (public or private endpoint) is not
    modelled here."""

    def __init__(self, standin: ArmStandIn, grafana_id: str, origin: reach.Origin = reach.WORKSTATION):
        super().__init__(standin, grafana_id, origin, tls=True)
        self.users: dict[str, str] = {}  # object ID -> Grafana role, of each caller who signed in

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def role(self, who: Principal) -> str | None:
        resources = self.standin.world.resources
        allowed = self.standin.proving.authorization.allowed(who, ACT_AS_GRAFANA_ADMIN, self.target_id, resources, True)
        return "Admin" if allowed else None

    def answer(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,  # noqa: ARG002 (the base class names it)
        peer: str,  # noqa: ARG002
    ) -> tuple[int, dict[str, str], bytes]:
        who = self.bearer_caller(headers)
        if who is None:
            return 401, {}, b""
        role = self.role(who)
        if role is None:
            page = f"<html><body><h1>{NO_ROLES_ASSIGNED}</h1></body></html>".encode()
            return 403, {"Content-Type": "text/html; charset=utf-8"}, page
        self.users[who.object_id] = role  # a user shows up in Grafana once signed in (troubleshoot-managed-grafana.md)
        json_headers = {"Content-Type": "application/json"}
        if method == "GET" and urlsplit(path).path.rstrip("/") == "/api/org/users":
            users = [
                {"orgId": 1, "userId": n, "email": "", "login": oid, "role": r}
                for n, (oid, r) in enumerate(sorted(self.users.items()), start=1)
            ]
            return 200, json_headers, json.dumps(users).encode()
        return 404, {}, b""  # no other Grafana call is served


# Azure Monitor's ingestion through a data collection endpoint (Prometheus remote write to
# <metricsIngestion.endpoint>/dataCollectionRules/<immutableId>/streams/Microsoft-PrometheusMetrics/api/v1/write, the
# path templates/cloud-init/prometheus_url.py builds). Who may send: "Monitoring Metrics Publisher role on the
# workspace's data collection rule", without which Prometheus logs HTTP 403 (MicrosoftDocs/azure-docs@
# ad35a0318021549d8b4e112f44939c1ebfd35a2a:articles/azure-monitor/containers/prometheus-remote-write-troubleshooting.md,
# "HTTP 403 error in the Prometheus log"). Which data action the service checks is not published: the operations list
# names Microsoft.Insights/DataCollectionRules/Data/Write, "Send data to a data collection rule"
# (learn.microsoft.com/azure/role-based-access-control/permissions/monitor, Microsoft.Insights DataActions), while the
# role's published JSON (data/builtin_roles.json) holds Microsoft.Insights/Metrics/Write and /Telemetry/Write; the
# stand-in lets a caller send who holds any of them on the rule, so the role the documentation names is what decides.
INGEST_ACTIONS = (
    "Microsoft.Insights/DataCollectionRules/Data/Write",
    "Microsoft.Insights/Metrics/Write",
    "Microsoft.Insights/Telemetry/Write",
)
INGEST_PATH = re.compile(r"^/dataCollectionRules/(?P<rule>[^/]+)/streams/(?P<stream>[^/]+)/")


class IngestionFront(_Front):
    """`origin`'s way to a data collection endpoint's ingestion, answered by the front: a bearer token's principal
    sends to the rule the path's immutable ID names. Refused without the rule's data action: 403, code OperationFailed,
    message "The authentication token provided does not have access to ingest data for the data collection rule with
    immutable Id '<id>'" and the pipeline's detail, as the Azure SDKs' ingestion troubleshooting guides print it
    (Azure/azure-sdk-for-net@ad59f3b9c300366a3652176050462367b0c6fe33:sdk/monitor/Azure.Monitor.Ingestion/
    TROUBLESHOOTING.md, Azure/azure-sdk-for-python@2be1f52208fa38ccd4a7f8c35d1196d3e61b7c6c:sdk/monitor/
    azure-monitor-ingestion/TROUBLESHOOTING.md, "Troubleshooting authorization errors"). Sent: 200 with no body (the
    payload, snappy-compressed protobuf, is not read: what is proved is who may send). The endpoint's network access
    is not modelled here."""

    def __init__(self, standin: ArmStandIn, endpoint_id: str, origin: reach.Origin = reach.WORKSTATION):
        super().__init__(standin, endpoint_id, origin, tls=True)
        self.accepted: list[tuple[str, str]] = []  # (caller's object ID, rule's immutable ID) of each send let in

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def answer(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,  # noqa: ARG002 (the base class names it)
        peer: str,  # noqa: ARG002
    ) -> tuple[int, dict[str, str], bytes]:
        who = self.bearer_caller(headers)
        if who is None:
            return 401, {}, b""
        found = INGEST_PATH.match(urlsplit(path).path)
        resources = self.standin.world.resources
        rule = next(
            (
                r
                for r in list(resources.values())
                if found
                and str(r.get("type", "")).lower() == "microsoft.insights/datacollectionrules"
                and (r.get("properties") or {}).get("immutableId") == found["rule"]
            ),
            None,
        )
        if method != "POST" or found is None or rule is None:
            return 404, {}, b""  # no other call, and no rule of that ID, is served
        authz = self.standin.proving.authorization
        if not any(authz.allowed(who, action, str(rule["id"]), resources, data=True) for action in INGEST_ACTIONS):
            message = (
                "The authentication token provided does not have access to ingest data for the data collection rule "
                f"with immutable Id '{found['rule']}' PipelineAccessResult: AccessGranted: False, IsRbacPresent: "
                f"False, IsDcrDceBindingValid: , DcrArmId: {rule['id']}, Message: Required authorization action was "
                f"not found for tenantId {TENANT} objectId {who.object_id} on resourceId {rule['id']}"
            )
            return (
                403,
                {"Content-Type": "application/json"},
                _json({"error": {"code": "OperationFailed", "message": message}}),
            )
        self.accepted.append((who.object_id, found["rule"]))
        return 200, {}, b""
