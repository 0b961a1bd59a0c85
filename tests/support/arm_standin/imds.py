"""The instance metadata service of the stand-in's VMs: a VM's scripts ask it for their subscription and for tokens of
the managed identities attached to that VM, and the token it hands out is the stand-in's bearer token for that
identity's principal (proving.ProvingGround), so the data planes judge the identity's own role assignments.

Each VM reaches it at its own base URL, `route(vm, url)` (set a VM's HPCLZ_IMDS_URL to `url` and register
`route` in `standin.compute.from_vm`): requests carry the VM in the path the way the real service knows its caller
by the link-local connection. Paths and parameters: GET /metadata/instance/compute/subscriptionId?format=text
(learn.microsoft.com/azure/virtual-machines/instance-metadata-service, "Instance metadata"); GET
/metadata/identity/oauth2/token?resource=...&mi_res_id=<identity resource ID>, header Metadata: true, answering
{"access_token": ...} (learn.microsoft.com/entra/identity/managed-identities-azure-resources/how-to-use-vm-token,
"Get a token using HTTP"). An identity the VM does not carry gets 400 invalid_request "Identity not found" (the same
page, "Error handling")."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import parse_qs, quote, unquote, urlsplit

if TYPE_CHECKING:
    from tests.support.arm_standin.server import ArmStandIn


class Imds:
    def __init__(self, standin: ArmStandIn):
        self.standin = standin
        self.issued: list[tuple[str, str]] = []  # (VM name, identity resource ID) for tests to read
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Self:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def route(self, vm: dict[str, Any], value: str) -> str:
        """The VM's own base URL for a value that is this service's URL; any other value as it is."""
        if value != self.url:
            return value
        return f"{self.url}/vm/{quote(str(vm['id']).lower(), safe='')}"

    def answer(self, path: str, headers: dict[str, str]) -> tuple[int, str]:
        parts = urlsplit(path)
        segments = parts.path.split("/", 3)  # "", "vm", <vm id>, rest
        if len(segments) < 4 or segments[1] != "vm" or headers.get("metadata", "").lower() != "true":
            return 400, json.dumps({"error": "invalid_request", "error_description": "Required metadata header"})
        vm = self.standin.world.resources.get(unquote(segments[2]))
        if vm is None:
            return 404, "no such VM"
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        rest = "/" + segments[3]
        if rest == "/metadata/instance/compute/subscriptionId":
            return 200, self.standin.world.subscription_id
        if rest == "/metadata/instance/compute":
            # The compute category as JSON (same page, "Instance metadata": compute.subscriptionId, name, resourceId),
            # the fields the stand-in knows.
            return 200, json.dumps(
                {
                    "subscriptionId": self.standin.world.subscription_id,
                    "name": vm.get("name", ""),
                    "resourceId": vm["id"],
                }
            )
        if rest == "/metadata/identity/oauth2/token":
            return self._token(vm, query.get("mi_res_id", ""))
        return 404, "not found"

    def _token(self, vm: dict[str, Any], identity: str) -> tuple[int, str]:
        attached = [str(k) for k in ((vm.get("identity") or {}).get("userAssignedIdentities") or {})]
        name = identity.rstrip("/").rsplit("/", 1)[-1].lower()
        carried = any(name in key.lower() and "userassignedidentities" in key.lower() for key in attached)
        found = self.standin.world.resources.get(identity.lower())
        principal = str(((found or {}).get("properties") or {}).get("principalId") or "")
        if not carried or not principal:
            return 400, json.dumps({"error": "invalid_request", "error_description": "Identity not found"})
        token = f"standin-token-{principal}"
        from tests.support.arm_standin.authz import Principal

        self.standin.proving.principals[token] = Principal(principal, kind="ServicePrincipal", name=name)
        self.issued.append((str(vm.get("name", "")), identity))
        return 200, json.dumps(
            {"access_token": token, "token_type": "Bearer", "resource": "https://storage.azure.com/"}
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        imds = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: ARG002 (the base class names it)
                return

            def do_GET(self) -> None:
                try:
                    status, body = imds.answer(self.path, {k.lower(): v for k, v in self.headers.items()})
                except Exception as exc:  # a stand-in bug shows as a 500 and fails the test, never a hang
                    imds.standin.bugs.append(repr(exc))
                    status, body = 500, repr(exc)
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
