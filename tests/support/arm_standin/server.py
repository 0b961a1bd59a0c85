"""A local HTTPS server speaking the part of the ARM REST API hpclz calls.

Shapes follow the recorded exchanges in tests/fixtures/arm/: PUT deployment -> 201 +
Azure-AsyncOperation -> operation status -> GET; what-if and resource-group delete -> 202 + Location.
Drive it with the real azure-mgmt-* clients; inject faults through `standin.faults`.
"""

from __future__ import annotations

import inspect
import json
import re
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.arm_standin import listing
from tests.support.arm_standin.catalog import VM_IMAGE, default_skus, default_usages, vm_image_body
from tests.support.arm_standin.certs import make_certificate
from tests.support.arm_standin.faults import Faults
from tests.support.arm_standin.features import FEATURE, feature_body
from tests.support.arm_standin.graph import GraphFront
from tests.support.arm_standin.in_use import in_use_refusal
from tests.support.arm_standin.marketplace_terms import TERMS, terms_body
from tests.support.arm_standin.names import CHECK_NAME, name_answer
from tests.support.arm_standin.proving import ProvingGround
from tests.support.arm_standin.repair import Repairs
from tests.support.arm_standin.run_commands import VirtualMachines
from tests.support.arm_standin.whatif import what_if_changes
from tests.support.arm_standin.world import ArmError, DeploymentRun, World, deployment_key
from tests.support.locker import locker_env

SUB = r"/subscriptions/(?P<sub>[^/]+)"
RG = SUB + r"/resourcegroups/(?P<rg>[^/]+)"
DEPLOYMENTS = r"/providers/microsoft\.resources/deployments/(?P<name>[^/]+)"
WRITE_METHODS = {"PUT", "POST", "DELETE", "PATCH"}


@dataclass
class LoggedRequest:
    method: str
    path: str
    status: int


class ArmStandIn:
    """Start with `with ArmStandIn(tmp_path) as arm:`; point hpclz at `arm.env()`."""

    def __init__(
        self, workdir: Path, subscription_id: str = "00000000-0000-0000-0000-00000000c0de", token: str = "standin-token"
    ):
        self.world = World(subscription_id)
        self.token = token
        self.log: list[LoggedRequest] = []
        self.cert, self.key = make_certificate(workdir)
        self._server: ThreadingHTTPServer | None = None
        self.operation_retry_after = 0
        self.bugs: list[str] = []
        self.compute = VirtualMachines(self.world)
        # Authorization (real built-in roles) and Azure Policy (real built-in definitions) on every request and write.
        self.proving = ProvingGround(self.world, token, bugs=self.bugs)
        self.repairs = Repairs(
            self.world,
            lambda kind, done: self._async(kind, done, lambda: None),
            lambda op: self._op_url(f"/subscriptions/{self.subscription_id}/operationresults/{op}"),
        )
        # Microsoft Graph (CycleCloud's app and its app role assignments), reached through HPCLZ_GRAPH_ENDPOINT.
        self.graph = GraphFront(self)
        # Deployment name (lower case) -> seconds ARM takes to answer its PUT after starting the run: a client killed
        # in that time leaves a run in ARM that it never learnt of (a slow answer, or one lost on the way back).
        self.slow_put_answer: dict[str, float] = {}

    @property
    def faults(self) -> Faults:
        return self.world.faults

    @property
    def subscription_id(self) -> str:
        return self.world.subscription_id

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def env(self, poll_interval: float = 0.05) -> dict[str, str]:
        return {
            "HPCLZ_ARM_ENDPOINT": self.url,
            "HPCLZ_ARM_CA_BUNDLE": str(self.cert),
            "HPCLZ_AZURE_TOKEN": self.token,
            "HPCLZ_POLL_INTERVAL": str(poll_interval),
            "HPCLZ_RETRY_BACKOFF": "0.01",
            "AZURE_SUBSCRIPTION_ID": self.subscription_id,
            "HPCLZ_GRAPH_ENDPOINT": self.graph.url,
            # Deploy uploads hpclz's wheel to CycleCloud's locker before the compute deployment: Azurite stands in.
            **locker_env(),
        }

    def writes(self) -> list[LoggedRequest]:
        return [r for r in self.log if r.method in WRITE_METHODS]

    def start(self) -> ArmStandIn:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.graph.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self.graph.stop()

    def __enter__(self) -> ArmStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @contextmanager
    def in_environment(self, monkeypatch: Any) -> Iterator[ArmStandIn]:
        """Running, with hpclz pointed at it through the environment (a pytest MonkeyPatch); a failure of the
        stand-in itself fails the test, so a broken stand-in never passes for an hpclz bug or success."""
        with self:
            for key, value in self.env().items():
                monkeypatch.setenv(key, value)
            yield self
            assert self.bugs == [], f"the stand-in itself failed: {self.bugs}"

    # ----- routing -----
    def routes(self) -> list[tuple[str, str, Callable[..., tuple[int, dict[str, str], Any]]]]:
        return [
            ("GET", SUB + FEATURE, self._feature),
            ("POST", SUB + CHECK_NAME, self._check_name),
            ("GET", SUB + r"/providers/microsoft\.compute/skus", self._skus),
            ("GET", SUB + r"/providers/microsoft\.compute/locations/(?P<loc>[^/]+)/usages", self._usages),
            ("GET", SUB + VM_IMAGE, self._vm_image),
            ("GET", SUB + TERMS, self._terms),
            ("GET", SUB + r"/providers/(?P<ns>[^/]+)", self._provider),
            ("POST", SUB + r"/providers/(?P<ns>[^/]+)/register", self._register),
            ("GET", SUB + r"/operationresults/(?P<op>[^/]+)", self._operation_result),
            # ARM's resource-group operations list has no providers/Microsoft.Resources segment.
            ("GET", RG + r"/deployments/(?P<name>[^/]+)/operations", self._deployment_operations),
            *self._deployment_routes(RG),
            *self._deployment_routes(SUB),
            *self.compute.routes(RG),
            *self.repairs.routes(RG, SUB),
            ("GET", RG + r"/resources", self._list_group_resources),
            ("PUT", RG, self._put_group),
            ("GET", RG, self._get_group),
            ("HEAD", RG, self._head_group),
            ("DELETE", RG, self._delete_group),
            ("GET", RG + r"/providers/.+", self._get_resource),
            ("DELETE", RG + r"/providers/.+", self._delete_resource),
            ("GET", SUB + r"/providers/.+", self._get_resource),
            ("DELETE", SUB + r"/providers/.+", self._delete_resource),
        ]

    def _deployment_routes(self, prefix: str) -> list[tuple[str, str, Callable[..., tuple[int, dict[str, str], Any]]]]:
        return [
            ("GET", prefix + DEPLOYMENTS + r"/operationstatuses/(?P<op>[^/]+)", self._operation_status),
            ("GET", prefix + DEPLOYMENTS + r"/operations", self._deployment_operations),
            ("POST", prefix + DEPLOYMENTS + r"/validate", self._validate),
            ("POST", prefix + DEPLOYMENTS + r"/whatif", self._what_if),
            ("POST", prefix + DEPLOYMENTS + r"/cancel", self._cancel),
            ("PUT", prefix + DEPLOYMENTS, self._put_deployment),
            ("GET", prefix + DEPLOYMENTS, self._get_deployment),
            ("HEAD", prefix + DEPLOYMENTS, self._head_deployment),
        ]

    def dispatch(
        self, method: str, path: str, body: Any, query: dict[str, list[str]], principal: Any = None
    ) -> tuple[int, dict[str, str], Any]:
        if principal is not None:
            # ARM authorizes the caller at the request's scope before it looks the subscription up: a principal with no
            # role in another subscription is refused AuthorizationFailed over that scope, "or the scope is invalid"
            # (ARM's own wording; spinnaker/spinnaker.io#240 shows it for a service principal with no role on the
            # subscription it named). Only a caller whose roles reach there (assigned at "/") learns it does not exist.
            self.proving.check_request(principal, method, path)
        other = re.match(r"/subscriptions/([^/]+)", path, re.I)
        if other and other.group(1).lower() != self.subscription_id.lower():
            raise ArmError(404, "SubscriptionNotFound", f"The subscription '{other.group(1)}' could not be found.")
        for route_method, pattern, fn in self.routes():
            match = re.fullmatch(pattern, path, re.I)
            if route_method == method and match:
                groups = {k: v for k, v in match.groupdict().items() if v is not None}
                if groups.get("sub", self.subscription_id).lower() != self.subscription_id.lower():
                    raise ArmError(
                        404, "SubscriptionNotFound", f"The subscription '{groups['sub']}' could not be found."
                    )
                if "query" in inspect.signature(fn).parameters:  # a handler that reads the query string names it
                    groups["query"] = query
                if fn == self._put_deployment:
                    groups["principal"] = principal
                return fn(body=body, path=path, **groups)
        raise ArmError(404, "NoRegisteredProviderFound", f"No route for {method} {path}")

    def _async(self, kind: str, done: Callable[[], bool], result: Callable[[], Any]) -> str:
        op = uuid.uuid4().hex
        self.world.async_ops[op] = (kind, done, result)
        return op

    def _op_url(self, path: str) -> str:
        return f"{self.url}{path}?api-version=2025-04-01"

    # ----- deployments -----
    def _dep_key(self, rg: str | None, name: str) -> str:
        return deployment_key(rg, name)

    def _dep_id(self, rg: str | None, name: str) -> str:
        base = f"/subscriptions/{self.subscription_id}" + (f"/resourceGroups/{rg}" if rg else "")
        return f"{base}/providers/Microsoft.Resources/deployments/{name}"

    def _run(self, rg: str | None, name: str) -> DeploymentRun:
        run = self.world.deployments.get(self._dep_key(rg, name))
        if run is None:
            raise ArmError(404, "DeploymentNotFound", f"Deployment '{name}' could not be found.")
        return run

    def _put_deployment(
        self, body: Any, path: str, name: str, sub: str, rg: str | None = None, principal: Any = None
    ) -> tuple[int, dict[str, str], Any]:
        self.world.check_target(rg)
        planned = self.world.plan(body, rg, name)
        existing = self.world.deployments.get(self._dep_key(rg, name))
        if existing and existing.state in ("Accepted", "Running"):
            raise ArmError(409, "DeploymentActive", f"The deployment '{name}' is already running.")
        run = DeploymentRun(self._dep_id(rg, name), name, self._dep_key(rg, name), rg, body.get("location"), body)
        run.principal = principal
        self.world.start(run, planned)
        time.sleep(self.slow_put_answer.get(name.lower(), 0.0))
        status_url = self._op_url(f"{run.id}/operationStatuses/{uuid.uuid4().hex[:20]}")
        view = run.view(self.world.output_order)
        view["properties"]["provisioningState"] = "Accepted"
        return (200 if existing else 201), {"Azure-AsyncOperation": status_url}, view

    def _operation_status(
        self, body: Any, path: str, name: str, op: str, sub: str, rg: str | None = None
    ) -> tuple[int, dict[str, str], Any]:
        run = self._run(rg, name)
        status: dict[str, Any] = {"status": run.state}
        if run.error:
            status["error"] = run.error
        headers = {"Retry-After": str(self.operation_retry_after)} if run.state in ("Accepted", "Running") else {}
        return 200, headers, status

    def _get_deployment(
        self, body: Any, path: str, name: str, sub: str, rg: str | None = None
    ) -> tuple[int, dict[str, str], Any]:
        return 200, {}, self._run(rg, name).view(self.world.output_order)

    def _head_deployment(
        self, body: Any, path: str, name: str, sub: str, rg: str | None = None
    ) -> tuple[int, dict[str, str], Any]:
        self._run(rg, name)
        return 204, {}, None

    def _deployment_operations(
        self, body: Any, path: str, name: str, sub: str, rg: str | None = None
    ) -> tuple[int, dict[str, str], Any]:
        return 200, {}, {"value": list(self._run(rg, name).operations)}

    def _validate(
        self, body: Any, path: str, name: str, sub: str, rg: str | None = None
    ) -> tuple[int, dict[str, str], Any]:
        self.world.check_target(rg)
        planned = self.world.plan(body, rg, name)
        props = {
            "provisioningState": "Succeeded",
            "mode": body.get("properties", {}).get("mode", "Incremental"),
            "validatedResources": [{"id": p.id} for p in planned],
            "correlationId": str(uuid.uuid4()),
        }
        return (
            200,
            {},
            {
                "id": self._dep_id(rg, name),
                "name": name,
                "type": "Microsoft.Resources/deployments",
                "properties": props,
            },
        )

    def _what_if(
        self, body: Any, path: str, name: str, sub: str, rg: str | None = None
    ) -> tuple[int, dict[str, str], Any]:
        self.world.check_target(rg)
        planned = self.world.plan(body, rg, name)
        changes = what_if_changes(self.world, planned, rg)
        op = self._async("whatif", lambda: True, lambda: {"status": "Succeeded", "properties": {"changes": changes}})
        return (
            202,
            {
                "Location": self._op_url(f"/subscriptions/{self.subscription_id}/operationresults/{op}"),
                "Retry-After": "0",
            },
            None,
        )

    def _cancel(
        self, body: Any, path: str, name: str, sub: str, rg: str | None = None
    ) -> tuple[int, dict[str, str], Any]:
        run = self._run(rg, name)
        if run.state not in ("Accepted", "Running"):
            raise ArmError(
                409,
                "DeploymentCannotBeCancelled",
                f"The deployment '{name}' cannot be cancelled because it has provisioning state '{run.state}'.",
            )
        run.cancel.set()
        return 204, {}, None

    def _operation_result(self, body: Any, path: str, op: str, sub: str) -> tuple[int, dict[str, str], Any]:
        entry = self.world.async_ops.get(op)
        if entry is None:
            raise ArmError(404, "OperationNotFound", f"Operation '{op}' not found.")
        _kind, done, result = entry
        if not done():
            return 202, {"Location": self._op_url(path), "Retry-After": str(self.operation_retry_after)}, None
        value = result()
        return (200, {}, value) if value is not None else (204, {}, None)

    # ----- resource groups and resources -----
    def _put_group(self, body: Any, path: str, sub: str, rg: str) -> tuple[int, dict[str, str], Any]:
        group, created = self.world.put_group(rg, body.get("location", ""), body.get("tags"))
        return (201 if created else 200), {}, group

    def _get_group(self, body: Any, path: str, sub: str, rg: str) -> tuple[int, dict[str, str], Any]:
        group = self.world.group(rg)
        if group is None:
            raise ArmError(404, "ResourceGroupNotFound", f"Resource group '{rg}' could not be found.")
        return 200, {}, group

    def _head_group(self, body: Any, path: str, sub: str, rg: str) -> tuple[int, dict[str, str], Any]:
        return (204 if self.world.group(rg) else 404), {}, None

    def _delete_group(self, body: Any, path: str, sub: str, rg: str) -> tuple[int, dict[str, str], Any]:
        if self.world.group(rg) is None:
            raise ArmError(404, "ResourceGroupNotFound", f"Resource group '{rg}' could not be found.")
        refusal = self.world.refuse_delete(path)
        if refusal is not None:
            raise ArmError(400, refusal.code, refusal.message)
        return self._delete_later(self.world.group_delete_latency, lambda: self.world.delete_group(rg))

    def _list_group_resources(self, body: Any, path: str, sub: str, rg: str) -> tuple[int, dict[str, str], Any]:
        if self.world.group(rg) is None:
            raise ArmError(404, "ResourceGroupNotFound", f"Resource group '{rg}' could not be found.")
        # Like ARM, list only top-level resources: no child (blobServices) or extension (roleAssignments) ones,
        # including extension resources assigned at the group itself (Resources - List By Resource Group lists
        # tracked resources; role and policy assignments are read through Microsoft.Authorization instead).
        items = [
            {k: r[k] for k in ("id", "name", "type", "location", "tags") if k in r}
            for r in self.world.resources_in(rg)
            if str(r["type"]).count("/") == 1
            and r["id"].lower().count("/providers/") == 1
            and not str(r["type"]).lower().startswith("microsoft.authorization/")
        ]
        return 200, {}, {"value": items}

    def _get_resource(self, body: Any, path: str, sub: str, rg: str | None = None) -> tuple[int, dict[str, str], Any]:
        found = self.world.resources.get(path.lower())
        if found is None and listing.is_collection(path):
            return 200, {}, listing.collection(self.world.resources, path)
        if found is None:
            raise ArmError(404, "ResourceNotFound", f"The Resource '{path}' was not found.")
        return 200, {}, found

    def _delete_resource(
        self, body: Any, path: str, sub: str, rg: str | None = None
    ) -> tuple[int, dict[str, str], Any]:
        found = self.world.resources.get(path.lower())
        if found is None:
            return 204, {}, None
        refusal = self.world.refuse_delete(path) or in_use_refusal(self.world.resources, path)
        if refusal is not None:
            raise ArmError(400, refusal.code, refusal.message)
        latency = self.world.latency.get(str(found["type"]).lower(), 0.0)
        if not latency:
            self.world.delete_resource(path)
            return 200, {}, None
        return self._delete_later(latency, lambda: self.world.delete_resource(path))

    def _delete_later(self, latency: float, delete: Callable[[], object]) -> tuple[int, dict[str, str], Any]:
        """ARM's asynchronous delete: 202 + Location, and the operation completes once the latency has passed."""
        finish_at = time.monotonic() + latency

        def done() -> bool:
            if time.monotonic() < finish_at:
                return False
            delete()
            return True

        op = self._async("delete", done, lambda: None)
        location = self._op_url(f"/subscriptions/{self.subscription_id}/operationresults/{op}")
        return 202, {"Location": location, "Retry-After": "0"}, None

    # ----- providers, SKUs, usages -----
    def _provider(self, body: Any, path: str, sub: str, ns: str) -> tuple[int, dict[str, str], Any]:
        key = ns.lower()
        if key in self.world.registering:
            self.world.registering[key] -= 1
            if self.world.registering[key] <= 0:
                del self.world.registering[key]
                self.world.unregistered.discard(key)
        state = (
            "Registering"
            if key in self.world.registering
            else ("NotRegistered" if key in self.world.unregistered else "Registered")
        )
        return (
            200,
            {},
            {
                "id": f"/subscriptions/{sub}/providers/{ns}",
                "namespace": ns,
                "registrationState": state,
                "resourceTypes": [],
            },
        )

    def _check_name(self, body: Any, path: str, sub: str, ns: str) -> tuple[int, dict[str, str], Any]:
        return 200, {}, name_answer(self.world.resources, self.world.taken_names, body or {})

    def _feature(self, body: Any, path: str, sub: str, ns: str, feature: str) -> tuple[int, dict[str, str], Any]:
        return 200, {}, feature_body(self.world.unregistered_features, sub, ns, feature)

    def _register(self, body: Any, path: str, sub: str, ns: str) -> tuple[int, dict[str, str], Any]:
        self.world.registering[ns.lower()] = 1
        return (
            200,
            {},
            {"id": f"/subscriptions/{sub}/providers/{ns}", "namespace": ns, "registrationState": "Registering"},
        )

    def _skus(self, body: Any, path: str, sub: str, query: dict[str, list[str]]) -> tuple[int, dict[str, str], Any]:
        wanted = re.search(r"location eq '([^']+)'", (query.get("$filter") or [""])[0])
        location = wanted.group(1).lower() if wanted else None
        skus = self.world.skus if self.world.skus is not None else default_skus(location or "eastus")
        return (
            200,
            {},
            {"value": [s for s in skus if location is None or location in [x.lower() for x in s["locations"]]]},
        )

    def _usages(self, body: Any, path: str, sub: str, loc: str) -> tuple[int, dict[str, str], Any]:
        usages = self.world.usages.get(loc.lower())
        return 200, {}, {"value": usages if usages is not None else default_usages()}

    def _vm_image(
        self, body: Any, path: str, sub: str, loc: str, pub: str, offer: str, sku: str, version: str
    ) -> tuple[int, dict[str, str], Any]:
        """Virtual Machine Images - Get: every version exists unless a test took it away (world.missing_images)."""
        urn = f"{pub}:{offer}:{sku}:{version}".lower()
        if urn in self.world.missing_images:
            # Azure's answer for a version the region lacks (e.g. Get-AzVMImageSku's "ErrorCode: NotFound",
            # "StatusCode: 404", "Artifact: VMImage was not found.").
            raise ArmError(404, "NotFound", "Artifact: VMImage was not found.")
        return 200, {}, vm_image_body(sub, loc, pub, offer, sku, version, self.world.image_status.get(urn))

    def _terms(
        self, body: Any, path: str, sub: str, publisher: str, offer: str, plan: str
    ) -> tuple[int, dict[str, str], Any]:
        return 200, {}, terms_body(self.world.unaccepted_terms, sub, publisher, offer, plan)


def _make_handler(standin: ArmStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body leave in separate writes; without NODELAY, Nagle plus the client's
            # delayed ACK adds ~40 ms to every keep-alive request.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            path = parts.path.rstrip("/")
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            fault = standin.faults.for_request(self.command, path)
            if fault is not None and fault.kind == "drop":
                standin.log.append(LoggedRequest(self.command, path, 0))
                self.close_connection = True
                self.connection.shutdown(2)
                return
            principal = standin.proving.caller(self.headers.get("Authorization"))
            if principal is None:
                status, headers, body = (
                    401,
                    {},
                    {"error": {"code": "InvalidAuthenticationToken", "message": "The access token is invalid."}},
                )
            elif fault is not None:
                status = 429 if fault.kind == "throttle" else fault.status
                headers = {"Retry-After": str(fault.retry_after)} if fault.kind == "throttle" else {}
                body = {"error": {"code": "TooManyRequests" if status == 429 else fault.code, "message": fault.message}}
            else:
                try:
                    parsed = json.loads(raw) if raw else {}
                    status, headers, body = standin.dispatch(
                        self.command, path, parsed, parse_qs(parts.query), principal
                    )
                except ArmError as exc:
                    status, headers, body = exc.status, {}, exc.body()
                except Exception as exc:  # a stand-in bug must show up as a 500 the test can see, not a hang
                    status, headers, body = 500, {}, {"error": {"code": "StandInBug", "message": repr(exc)}}
                    standin.bugs.append(repr(exc))
            standin.log.append(LoggedRequest(self.command, path, status))
            data = b"" if body is None or self.command == "HEAD" else json.dumps(body).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("x-ms-request-id", str(uuid.uuid4()))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if data:
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _handle

    return Handler
