"""What the stand-in's Azure holds: resource groups, resources, deployments, providers, SKUs, usages.

Deployments run in a background thread per deployment, resource by resource, with per-type latency,
so a client sees Accepted -> Running -> Succeeded/Failed as with real ARM.
"""

from __future__ import annotations

import copy
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.support.arm_standin import behaviours, listing, netapp
from tests.support.arm_standin.expressions import ExpressionError, Scope, evaluate
from tests.support.arm_standin.faults import Faults
from tests.support.arm_standin.templates import PlannedResource, TemplateError, expand


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


DEPLOYMENTS = "microsoft.resources/deployments"


def deployment_key(group: str | None, name: str) -> str:
    """Where a deployment lives: its resource group (none: the subscription) and its name, case-insensitive."""
    return f"{(group or '').lower()}|{name.lower()}"


class ArmError(Exception):
    def __init__(self, status: int, code: str, message: str, target: str | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.target = status, code, message, target

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.target:
            error["target"] = self.target
        return {"error": error}


@dataclass
class DeploymentRun:
    id: str
    name: str
    scope_key: str
    resource_group: str | None
    location: str | None
    body: dict[str, Any]
    state: str = "Accepted"
    correlation_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    operations: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    output_resources: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    timestamp: str = field(default_factory=_now)
    began: float = field(default_factory=time.perf_counter)  # for benchmarks: ARM-side start and end
    ended: float | None = None
    principal: Any = None  # who submitted it (authz.Principal): each resource's write is checked as that caller

    def view(self, order: Callable[[list[str]], list[str]] = list) -> dict[str, Any]:
        """`order`: how outputResources are listed (ARM promises no order; by default, as provisioned)."""
        props = self.body.get("properties", {})
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "type": "Microsoft.Resources/deployments",
            "tags": self.body.get("tags", {}),
            "properties": {
                "templateHash": str(abs(hash(str(props.get("template")))) % 10**20),
                "parameters": {
                    k: {"type": "String", "value": v.get("value") if isinstance(v, dict) else v}
                    for k, v in (props.get("parameters") or {}).items()
                    if k not in _secure_names(props.get("template") or {})  # ARM never echoes a secure value
                },
                "mode": props.get("mode", "Incremental"),
                "correlationId": self.correlation_id,
                "provisioningState": self.state,
                "timestamp": self.timestamp,
                "dependencies": [],
                "outputs": self.outputs if self.state == "Succeeded" else None,
                "outputResources": (
                    [{"id": i} for i in order(list(self.output_resources))] if self.state == "Succeeded" else None
                ),
            },
        }
        if self.location:
            out["location"] = self.location
        if self.error:
            out["properties"]["error"] = self.error
        return out


class World:
    def __init__(self, subscription_id: str):
        self.subscription_id = subscription_id
        self.lock = threading.RLock()
        self.groups: dict[str, dict[str, Any]] = {}
        self.resources: dict[str, dict[str, Any]] = {}
        self.deployments: dict[str, DeploymentRun] = {}
        self.async_ops: dict[str, Any] = {}
        self.unregistered: set[str] = set()
        self.unregistered_features: set[str] = set()  # "namespace/feature", lower case
        self.taken_names: set[str] = set()  # global names held outside this subscription, lower case
        self.registering: dict[str, int] = {}
        self.latency: dict[str, float] = {}
        self.group_delete_latency = 0.0
        self.skus: list[dict[str, Any]] | None = None  # None: the default catalog for the asked location
        self.usages: dict[str, list[dict[str, Any]]] = {}
        # Marketplace image versions (publisher:offer:sku:version, lower case) no region has, and the
        # imageDeprecationStatus a version reports; any other version exists and is Active.
        self.missing_images: set[str] = set()
        self.unaccepted_terms: set[str] = set()  # Marketplace plans "publisher:offer:plan" (lower case) not accepted
        self.image_status: dict[str, dict[str, Any]] = {}
        self.faults = Faults()
        self.names = behaviours.GlobalNames()
        # Azure enables Network Watcher in a region when the subscription's first VNet there is created, unless the
        # subscription opted out (behaviours.network_watcher_for); a test sets False to be such a subscription.
        self.auto_network_watcher = True
        # Backups a deleted protected item left soft-deleted, per vault ID (lower case): containers' names. A test
        # clears it to play the soft-delete retention running out.
        self.soft_deleted_backups: dict[str, list[str]] = {}
        # How a finished deployment lists its outputResources; a test may shuffle them, as real ARM may.
        self.output_order: Callable[[list[str]], list[str]] = list
        # Checks each resource write of a deployment must pass (authorization, policy: the server installs them),
        # given the run, the resource as it would be stored, and the world's resources; a refusal fails the write.
        self.guards: list[Callable[[DeploymentRun, dict[str, Any]], behaviours.Refusal | None]] = []

    # ----- resource groups and resources -----
    def group(self, name: str) -> dict[str, Any] | None:
        return self.groups.get(name.lower())

    def put_group(self, name: str, location: str, tags: dict[str, str] | None) -> tuple[dict[str, Any], bool]:
        with self.lock:
            existing = self.groups.get(name.lower())
            body = {
                "id": f"/subscriptions/{self.subscription_id}/resourceGroups/{name}",
                "name": name,
                "type": "Microsoft.Resources/resourceGroups",
                "location": location,
                "tags": tags or {},
                "properties": {"provisioningState": "Succeeded"},
            }
            self.groups[name.lower()] = body
            return body, existing is None

    def resources_in(self, group: str) -> list[dict[str, Any]]:
        prefix = f"/subscriptions/{self.subscription_id}/resourcegroups/{group.lower()}/"
        with self.lock:
            return [r for key, r in self.resources.items() if key.startswith(prefix)]

    def refuse_delete(self, rid: str) -> behaviours.Refusal | None:
        """What ARM refuses to delete: a Recovery Services vault holding backups, or a group holding such a vault."""
        key = rid.lower()
        with self.lock:
            if key.count("/") == 4 and "/resourcegroups/" in key:
                vaults = [
                    r["id"] for r in self.resources_in(key.split("/")[4]) if r["type"].lower() == behaviours.RS_VAULT
                ]
            else:
                found = self.resources.get(key)
                vaults = [found["id"]] if found and str(found["type"]).lower() == behaviours.RS_VAULT else []
            for vault in vaults:
                refusal = behaviours.vault_not_empty(
                    vault, self.resources, self.soft_deleted_backups.get(vault.lower(), [])
                )
                if refusal is not None:
                    return refusal
        return None

    def delete_group(self, name: str) -> None:
        with self.lock:
            for resource in self.resources_in(name):
                behaviours.soft_delete(self.names, resource)
                self.resources.pop(resource["id"].lower(), None)
            self.groups.pop(name.lower(), None)

    def delete_resource(self, rid: str) -> bool:
        with self.lock:
            key = rid.lower()
            if key.startswith(f"/subscriptions/{self.subscription_id}/resourcegroups/") and key.count("/") == 4:
                existed = key.split("/")[4] in self.groups
                self.delete_group(rid.split("/")[4])
                return existed
            found = self.resources.get(key)
            if found is not None and str(found["type"]).lower() == behaviours.PROTECTED_ITEM:
                vault = key.split("/backupfabrics/")[0]
                if behaviours.soft_deletes_backups(self.resources.get(vault)):
                    container = key.split("/protectioncontainers/")[1].split("/")[0]
                    self.soft_deleted_backups.setdefault(vault, []).append(container)
            children = [k for k in self.resources if k.startswith(key + "/")]
            for child in children:
                del self.resources[child]
            if key in self.resources:
                behaviours.soft_delete(self.names, self.resources[key])
            return self.resources.pop(key, None) is not None

    def lookup(self, rid: str) -> dict[str, Any] | None:
        with self.lock:
            found = self.resources.get(rid.lower()) or self.groups.get(rid.lower().rsplit("/", 1)[-1])
            return copy.deepcopy(found) if found else None

    # ----- deployments -----
    def scope_of(self, group: str | None) -> Scope:
        return Scope(self.subscription_id, group, "", "")

    def plan(self, body: dict[str, Any], group: str | None, name: str) -> list[PlannedResource]:
        props = body.get("properties") or {}
        location = (
            body.get("location") or (self.group(group) or {}).get("location", "") if group else body.get("location", "")
        )
        scope = Scope(self.subscription_id, group, location or "", name, lookup=self.lookup)
        try:
            planned = expand(props.get("template") or {}, props.get("parameters") or {}, scope)
        except TemplateError as exc:
            raise ArmError(400, exc.code, f"Deployment template validation failed: '{exc.message}'") from None
        except (ExpressionError, KeyError, StopIteration) as exc:
            raise ArmError(400, "InvalidTemplate", f"Deployment template validation failed: '{exc}'") from None
        for resource in _flatten(planned):
            namespace = resource.type.split("/")[0]
            if namespace.lower() in self.unregistered:
                raise ArmError(
                    409,
                    "MissingSubscriptionRegistration",
                    f"The subscription is not registered to use namespace '{namespace}'.",
                )
        return planned

    def check_target(self, group: str | None) -> None:
        if group is not None and self.group(group) is None:
            raise ArmError(404, "ResourceGroupNotFound", f"Resource group '{group}' could not be found.")

    def start(self, run: DeploymentRun, planned: list[PlannedResource]) -> None:
        with self.lock:
            self.deployments[run.scope_key] = run
        threading.Thread(target=self._execute, args=(run, planned), daemon=True).start()

    def _execute(self, run: DeploymentRun, planned: list[PlannedResource]) -> None:
        try:
            self._provision_all(run, planned)
        finally:
            run.ended = time.perf_counter()

    def _provision_all(self, run: DeploymentRun, planned: list[PlannedResource]) -> None:
        run.state = "Running"
        for resource in _own(planned):
            if run.cancel.is_set():
                run.state = "Canceled"
                return
            if resource.type.lower() == DEPLOYMENTS:
                failure = self._nested(run, resource)
            else:
                failure = self._provision(run, resource)
            if failure:
                run.error = {
                    "code": "DeploymentFailed",
                    "message": "At least one resource deployment operation failed. Please list deployment "
                    "operations for details. Please see https://aka.ms/arm-deployment-operations for usage details.",
                    "details": [failure],
                }
                run.state = "Failed"
                return
            run.output_resources.append(resource.id)
        if run.cancel.is_set():
            # A cancel ARM accepted (it runs then) ends the run Canceled, even if its last resource got done
            # meanwhile: "After the deployment is canceled, the provisioningState is set to Canceled"
            # (learn.microsoft.com/rest/api/resources/deployments/cancel).
            run.state = "Canceled"
            return
        template = run.body.get("properties", {}).get("template") or {}
        scope = self.plan_scope(run)
        try:
            expand(template, run.body.get("properties", {}).get("parameters") or {}, scope)
            run.outputs = {
                k: {"type": v.get("type", "String"), "value": _safe_eval(v.get("value"), scope)}
                for k, v in (template.get("outputs") or {}).items()
            }
        except (TemplateError, ExpressionError):
            run.outputs = {}
        run.state = "Succeeded"

    def _nested(self, run: DeploymentRun, resource: PlannedResource) -> dict[str, Any] | None:
        """A nested deployment is a deployment of its own at its own scope (the group its `resourceGroup` names, or
        the subscription), with its own operations and outputResources, read at its own ID; the outer run's
        operations list it as one target of type Microsoft.Resources/deployments, not what it holds (Deployment
        Operations - List, "Gets all deployments operations for a deployment", each with its targetResource:
        learn.microsoft.com/rest/api/resources/deploymentoperations/list). When the outer run succeeds its
        outputResources include what the nested one made ("AFAIK `outputResources` today captures resources from
        nested deployments as well", github.com/Azure/bicep-reps pull 3, review thread); a cancelled or failed run
        has no outputResources, so what a nested run made is then found only on the nested run, through its own
        operations. Cancelling the outer run does not cancel a nested run already going (Deployments - Cancel
        promises nothing about nested runs): the outer waits for it, and the caller cancels the nested run itself."""
        op = self._operation(run, resource)
        child = DeploymentRun(
            resource.id,
            resource.name,
            deployment_key(resource.resource_group, resource.name),
            resource.resource_group,
            resource.body.get("location"),
            {"properties": resource.body.get("properties") or {}, "tags": resource.body.get("tags") or {}},
        )
        child.principal = run.principal
        with self.lock:
            self.deployments[child.scope_key] = child
        try:
            self._provision_all(child, resource.nested)
        finally:
            child.ended = time.perf_counter()
        if child.state == "Succeeded":
            op["properties"].update(provisioningState="Succeeded", statusCode="OK", timestamp=_now())
            run.output_resources.extend(child.output_resources)
            return None
        inner = child.error or {"code": "DeploymentCanceled", "message": f"The deployment '{child.name}' was canceled."}
        op["properties"].update(
            provisioningState=child.state, statusCode="Conflict", statusMessage={"status": child.state, "error": inner}
        )
        if child.state == "Canceled" and run.cancel.is_set():
            return None  # the outer run ends Canceled on its own cancel
        return {
            "code": "DeploymentFailed",
            "target": resource.id,
            "message": "At least one resource deployment operation failed. Please list deployment operations for "
            "details. Please see https://aka.ms/arm-deployment-operations for usage details.",
            "details": [inner],
        }

    def plan_scope(self, run: DeploymentRun) -> Scope:
        location = (
            run.location or (self.group(run.resource_group) or {}).get("location", "")
            if run.resource_group
            else run.location
        )
        return Scope(self.subscription_id, run.resource_group, location or "", run.name, lookup=self.lookup)

    def _operation(self, run: DeploymentRun, resource: PlannedResource) -> dict[str, Any]:
        op: dict[str, Any] = {
            "id": f"{run.id}/operations/{uuid.uuid4().hex[:16].upper()}",
            "operationId": uuid.uuid4().hex[:16].upper(),
            "properties": {
                "provisioningOperation": "Create",
                "provisioningState": "Running",
                "timestamp": _now(),
                "duration": "PT0S",
                "trackingId": str(uuid.uuid4()),
                "targetResource": {"id": resource.id, "resourceType": resource.type, "resourceName": resource.name},
            },
        }
        run.operations.append(op)
        return op

    def _provision(self, run: DeploymentRun, resource: PlannedResource) -> dict[str, Any] | None:
        op = self._operation(run, resource)
        time.sleep(self.latency.get(resource.type.lower(), 0.0))
        fault = self.faults.for_resource(resource.type, resource.name)
        if fault is None and resource.resource_group and resource.type.lower() != "microsoft.resources/resourcegroups":
            if self.group(resource.resource_group) is None:
                fault_code, fault_message = (
                    "ResourceGroupNotFound",
                    f"Resource group '{resource.resource_group}' could not be found.",
                )
            else:
                fault_code = fault_message = ""
        else:
            fault_code, fault_message = (fault.code, fault.message) if fault else ("", "")
        if not fault_code:
            refusal = self._refusal(resource) or self._guarded(run, resource)
            fault_code, fault_message = (refusal.code, refusal.message) if refusal else ("", "")
        if fault_code:
            inner = {"code": fault_code, "message": fault_message}
            op["properties"].update(provisioningState="Failed", statusCode="BadRequest", statusMessage={"error": inner})
            return {
                "code": "ResourceDeploymentFailure",
                "target": resource.id,
                "message": "The resource operation completed with terminal provisioning state 'Failed'.",
                "details": [inner],
            }
        self._store(resource)
        op["properties"].update(provisioningState="Succeeded", statusCode="Created", timestamp=_now())
        return None

    def _refusal(self, resource: PlannedResource) -> behaviours.Refusal | None:
        """What ARM refuses of this PUT: a global name taken, an immutable property changed, a subnet in use."""
        name = resource.name.split("/")[-1]
        body = _late(resource)
        over = netapp.snapshots_over_limit(resource.type, body)
        if over is not None:
            return behaviours.Refusal(*over)
        patching = behaviours.guest_patching_unsupported(resource.type, body)
        if patching is not None:
            return patching
        if resource.type.lower() == behaviours.VNET:
            outside = behaviours.subnets_outside({**body, "name": name})
            if outside is not None:
                return outside
        with self.lock:
            if resource.type.lower() == listing.PEERING:
                refusal = listing.remote_gateway_refusal(resource.id, body, self.resources)
                if refusal is not None:
                    return refusal
            existing = self.resources.get(resource.id.lower())
            orphan = behaviours.parent_missing(resource.type, resource.id, self.resources)
            if orphan is not None:
                return orphan
            if existing is None:
                return behaviours.name_conflict(self.names, resource.type, name)
            refusal = behaviours.immutable_change(resource.type, name, existing, body)
            if refusal is None and resource.type.lower() == behaviours.VNET:
                others = [r for k, r in self.resources.items() if k != resource.id.lower()]
                refusal = behaviours.subnets_in_use(existing, body, others)
            return refusal

    def _guarded(self, run: DeploymentRun, resource: PlannedResource) -> behaviours.Refusal | None:
        view = {**_late(resource), "id": resource.id, "name": resource.name, "type": resource.type}
        if resource.location and "location" not in view:
            view["location"] = resource.location
        # Under the world's lock, as _refusal is: the guards (RBAC, Azure Policy) read every resource, which other
        # deployments' threads are storing meanwhile ("dictionary changed size during iteration" hung a deployment).
        with self.lock:
            for guard in self.guards:
                refusal = guard(run, view)
                if refusal is not None:
                    return refusal
        return None

    def _store(self, resource: PlannedResource) -> None:
        body = _late(resource)
        if resource.type.lower() == "microsoft.resources/resourcegroups":
            self.put_group(resource.name, str(body.get("location", "")), body.get("tags"))
            return
        if resource.type.lower() == "microsoft.resources/deployments":
            return
        stored = {
            "id": resource.id,
            "name": resource.name.split("/")[-1],
            "type": resource.type,
            "apiVersion": resource.api_version,
            "location": resource.location,
            "tags": body.get("tags") or {},
            "properties": {**(body.get("properties") or {}), **_read_only(resource), "provisioningState": "Succeeded"},
        }
        for key in ("sku", "kind", "zones", "identity"):
            if key in body:
                stored[key] = body[key]
        if "systemassigned" in str((body.get("identity") or {}).get("type", "")).lower():
            stored["identity"] = {**body["identity"], **_system_identity(resource)}
        with self.lock:
            self.resources[resource.id.lower()] = stored
            if resource.type.lower() == behaviours.VNET and self.auto_network_watcher:
                self._enable_network_watcher(resource.location or "")

    def _enable_network_watcher(self, location: str) -> None:
        group, watcher = behaviours.network_watcher_for(self.subscription_id, location)
        if self.group(group) is None:
            self.put_group(group, location, {})
        self.resources.setdefault(watcher["id"].lower(), watcher)


def _late(resource: PlannedResource) -> dict[str, Any]:
    if resource.late_body is None:
        return resource.body
    try:
        return resource.late_body()
    except (ExpressionError, KeyError, TypeError):
        return resource.body


IDENTITY = "microsoft.managedidentity/userassignedidentities"
ROLE_ASSIGNMENT = "microsoft.authorization/roleassignments"
DATA_COLLECTION_RULE = "microsoft.insights/datacollectionrules"
DATA_COLLECTION_ENDPOINT = "microsoft.insights/datacollectionendpoints"
TENANT = "00000000-0000-0000-0000-00000000aaaa"


def _read_only(resource: PlannedResource) -> dict[str, Any]:
    """What ARM adds to what a template said: an identity's principal (which its role assignments name,
    through `reference()`), an assignment's scope (which a GET of it returns with roleDefinitionId and
    principalId)."""
    rtype = resource.type.lower()
    if rtype == IDENTITY:
        return {
            "principalId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"principal|{resource.id.lower()}")),
            "clientId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"client|{resource.id.lower()}")),
            "tenantId": TENANT,
        }
    if rtype == ROLE_ASSIGNMENT:
        return {"scope": re.split(r"/providers/Microsoft\.Authorization/roleAssignments/", resource.id, flags=re.I)[0]}
    if rtype == DATA_COLLECTION_RULE:
        # "dcr-" and 32 hex digits (Azure/azure-rest-api-specs@ba16d1a: Microsoft.Insights 2022-06-01 example
        # DataCollectionRulesCreate.json: "dcr-b74e0d383fc9415abaa584ec41adece3").
        return {"immutableId": "dcr-" + uuid.uuid5(uuid.NAMESPACE_URL, f"dcr|{resource.id.lower()}").hex}
    if rtype == DATA_COLLECTION_ENDPOINT:
        # https://<name>-<suffix>.<region>-1.metrics.ingest.monitor.azure.com (learn.microsoft.com/azure/azure-monitor/
        # data-collection/data-collection-endpoint-overview, "Sample data collection endpoint").
        name = resource.id.rstrip("/").rsplit("/", 1)[-1].lower()
        suffix = uuid.uuid5(uuid.NAMESPACE_URL, f"dce|{resource.id.lower()}").hex[:4]
        region = str(resource.body.get("location", "")).lower()
        return {
            "metricsIngestion": {"endpoint": f"https://{name}-{suffix}.{region}-1.metrics.ingest.monitor.azure.com"}
        }
    return {}


def _system_identity(resource: PlannedResource) -> dict[str, str]:
    """The read-only principalId and tenantId ARM gives a system-assigned identity (ManagedServiceIdentity in the
    REST specs, e.g. Microsoft.Dashboard 2024-10-01); role assignments reach them through reference(..., 'full')."""
    return {"principalId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"system|{resource.id.lower()}")), "tenantId": TENANT}


def _secure_names(template: dict[str, Any]) -> set[str]:
    return {
        name
        for name, spec in (template.get("parameters") or {}).items()
        if str(spec.get("type", "")).lower() in ("securestring", "secureobject")
    }


def _own(planned: list[PlannedResource]) -> list[PlannedResource]:
    """What a run provisions itself: its resources and their children, but not what its nested deployments hold."""
    out: list[PlannedResource] = []
    for resource in planned:
        out.append(resource)
        if resource.type.lower() != DEPLOYMENTS:
            out.extend(_own(resource.nested))
    return out


def _flatten(planned: list[PlannedResource]) -> list[PlannedResource]:
    out: list[PlannedResource] = []
    for resource in planned:
        out.append(resource)
        out.extend(_flatten(resource.nested))
    return out


def _safe_eval(value: Any, scope: Scope) -> Any:
    try:
        return evaluate(value, scope)
    except (ExpressionError, KeyError, TypeError):
        return None
