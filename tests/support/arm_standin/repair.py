"""Node repair for the ARM stand-in: VM restart, VM and scale-set instance reimage, and Guest Health Reports.

Paths and shapes:
- Restart and reimage: azure-rest-api-specs, specification/compute/resource-manager/Microsoft.Compute/ComputeRP/
  stable/2024-07-01 (VirtualMachines_Restart `POST .../virtualMachines/{vm}/restart`, VirtualMachines_Reimage
  `POST .../virtualMachines/{vm}/reimage`, VirtualMachineScaleSetVMs_Reimage
  `POST .../virtualMachineScaleSets/{vmss}/virtualmachines/{instanceId}/reimage`): long-running, 200 or 202; like
  ARM, the stand-in answers 202 with a Location the SDK's poller follows to the end.
- Impact Reporting: `PUT /subscriptions/{sub}/providers/Microsoft.Impact/workloadImpacts/{name}` with
  `properties.{startDateTime, impactedResourceId, impactCategory}` required (azure-rest-api-specs,
  specification/impact/Impact.Management/workloadImpacts.tsp @0d36dc1, `WorkloadImpactProperties`; name pattern
  `^[a-zA-Z0-9][a-zA-Z0-9-:]*[a-zA-Z0-9]{3,120}$`). A Guest Health Report is such an impact whose category starts
  with `Resource.Hpc`, from the published list, and whose `additionalProperties` hold `PhysicalHostName` or
  `VmUniqueId` ("All HPC impact requests must include either PhysicalHostName (preferred) or VmUniqueId"):
  MicrosoftDocs/azure-compute-docs articles/azure-impact-reporting/guest-health-impact-report.md @01f777c and
  guest-health-impact-categories.md @883ff7b. 201 on create, 200 on a PUT to an existing name (createOrUpdate),
  with `impactUniqueId` and `reportedTimeUtc` added, as in examples/2023-12-01-preview/WorkloadAvailability_Create.json.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.support.arm_standin.world import ArmError, World

VMS = r"/providers/microsoft\.compute/virtualmachines/(?P<vm>[^/]+)"
SCALE_SET_VM = (
    r"/providers/microsoft\.compute/virtualmachinescalesets/(?P<vmss>[^/]+)/virtualmachines/(?P<instance>[^/]+)"
)
IMPACT = r"/providers/microsoft\.impact/workloadimpacts/(?P<name>[^/]+)"
IMPACT_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9-:]*[a-zA-Z0-9]{3,120}$")
# guest-health-impact-categories.md @883ff7b, "Detailed HPC impact categories".
HPC_CATEGORIES = frozenset(
    {
        "Resource.Hpc.Reset",
        "Resource.Hpc.Reboot",
        "Resource.Hpc.Unhealthy.HpcMissingGpu",
        "Resource.Hpc.Unhealthy.MissingIB",
        "Resource.Hpc.Unhealthy.IBPerformance",
        "Resource.Hpc.Unhealthy.IBPortDown",
        "Resource.Hpc.Unhealthy.IBPortFlapping",
        "Resource.Hpc.Unhealthy.HpcGpuDcgmDiagFailure",
        "Resource.Hpc.Unhealthy.HpcRowRemapFailure",
        "Resource.Hpc.Unhealthy.HpcInforomCorruption",
        "Resource.Hpc.Unhealthy.HpcGenericFailure",
        "Resource.Hpc.Unhealthy.ManualInvestigation",
        "Resource.Hpc.Unhealthy.XID95UncontainedECCError",
        "Resource.Hpc.Unhealthy.XID94ContainedECCError",
        "Resource.Hpc.Unhealthy.XID79FallenOffBus",
        "Resource.Hpc.Unhealthy.XID48DoubleBitECC",
        "Resource.Hpc.Unhealthy.UnhealthyGPUNvidiasmi",
        "Resource.Hpc.Unhealthy.NvLink",
        "Resource.Hpc.Unhealthy.HpcDcgmiThermalReport",
        "Resource.Hpc.Unhealthy.ECCPageRetirementTableFull",
        "Resource.Hpc.Unhealthy.DBEOverLimit",
        "Resource.Hpc.Unhealthy.GpuXIDError",
        "Resource.Hpc.Unhealthy.AmdGpuResetFailed",
        "Resource.Hpc.Unhealthy.EROTFailure",
        "Resource.Hpc.Unhealthy.GPUMemoryBWFailure",
        "Resource.Hpc.Unhealthy.CPUPerformance",
    }
)
REQUIRED = ("startDateTime", "impactedResourceId", "impactCategory")

Route = tuple[str, str, Callable[..., tuple[int, dict[str, str], Any]]]


@dataclass
class RepairLog:
    """What was done to each machine (resource ID, lower case -> actions in order), for tests to read."""

    actions: dict[str, list[str]] = field(default_factory=dict)
    impacts: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> the stored workloadImpact
    puts: list[str] = field(default_factory=list)  # every impact PUT, by name, repeats included
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, resource_id: str) -> list[str]:
        with self.lock:
            return list(self.actions.get(resource_id.lower(), []))


class Repairs:
    """Restart, reimage and Impact Reporting routes. `on_action(resource_id, action)` runs when an operation
    completes: a test uses it to make the machine healthy again (or not), as a real restart or reimage might."""

    def __init__(
        self, world: World, start_async: Callable[[str, Callable[[], bool]], str], op_url: Callable[[str], str]
    ):
        self.world = world
        self.log = RepairLog()
        self.on_action: Callable[[str, str], None] = lambda _rid, _action: None
        self._start_async = start_async
        self._op_url = op_url

    def add_scale_set_instance(
        self, rg: str, vmss: str, instance_id: str, tags: dict[str, str], location: str = "eastus2"
    ) -> str:
        rid = (
            f"/subscriptions/{self.world.subscription_id}/resourceGroups/{rg}/providers/Microsoft.Compute/"
            f"virtualMachineScaleSets/{vmss}/virtualMachines/{instance_id}"
        )
        self.world.resources[rid.lower()] = {
            "id": rid,
            "name": f"{vmss}_{instance_id}",
            "instanceId": instance_id,
            "type": "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
            "location": location,
            "tags": tags,
            "properties": {"vmId": str(uuid.uuid4()), "provisioningState": "Succeeded"},
        }
        return rid

    def routes(self, rg: str, sub: str) -> list[Route]:
        return [
            ("POST", rg + VMS + r"/restart", self._restart),
            ("POST", rg + VMS + r"/reimage", self._reimage_vm),
            ("POST", rg + SCALE_SET_VM + r"/restart", self._instance("restart")),
            ("POST", rg + SCALE_SET_VM + r"/reimage", self._instance("reimage")),
            ("PUT", sub + IMPACT, self._put_impact),
            ("GET", sub + IMPACT, self._get_impact),
        ]

    # ----- compute -----
    def _restart(self, path: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        return self._act(path.rsplit("/", 1)[0], "restart")

    def _reimage_vm(self, path: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        return self._act(path.rsplit("/", 1)[0], "reimage")

    def _instance(self, action: str) -> Callable[..., tuple[int, dict[str, str], Any]]:
        def act(path: str, **_: Any) -> tuple[int, dict[str, str], Any]:
            return self._act(path.rsplit("/", 1)[0], action)

        return act

    def _act(self, resource_path: str, action: str) -> tuple[int, dict[str, str], Any]:
        found = self.world.resources.get(resource_path.lower())
        if found is None:
            raise ArmError(404, "ResourceNotFound", f"The Resource '{resource_path}' was not found.")

        def done() -> bool:
            with self.log.lock:
                self.log.actions.setdefault(found["id"].lower(), []).append(action)
            self.on_action(found["id"], action)
            return True

        op = self._start_async(action, done)
        return 202, {"Location": self._op_url(op), "Retry-After": "0"}, None

    # ----- Impact Reporting -----
    def _put_impact(self, body: Any, sub: str, name: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        if not IMPACT_NAME.match(name):
            raise ArmError(400, "InvalidResourceName", f"The workload impact name '{name}' is invalid.")
        props = body.get("properties") if isinstance(body, dict) else None
        if not isinstance(props, dict):
            raise ArmError(400, "InvalidRequestContent", "The request content must have a 'properties' object.")
        missing = [key for key in REQUIRED if not props.get(key)]
        if missing:
            raise ArmError(400, "InvalidRequestContent", f"Required properties missing: {', '.join(missing)}.")
        category = str(props["impactCategory"])
        if category.startswith("Resource.Hpc"):
            if category not in HPC_CATEGORIES:
                raise ArmError(400, "InvalidImpactCategory", f"Impact category '{category}' is not supported.")
            extra = props.get("additionalProperties") or {}
            if not (extra.get("PhysicalHostName") or extra.get("VmUniqueId")):
                raise ArmError(400, "InvalidRequestContent", "HPC impacts must include PhysicalHostName or VmUniqueId.")
        rid = f"/subscriptions/{sub}/providers/Microsoft.Impact/workloadImpacts/{name}"
        with self.log.lock:
            self.log.puts.append(name)
            existing = self.log.impacts.get(name.lower())
            stored = {
                "id": rid,
                "name": name,
                "type": "Microsoft.Impact/workloadImpacts",
                "properties": {
                    **props,
                    "impactUniqueId": existing["properties"]["impactUniqueId"] if existing else str(uuid.uuid4()),
                    "reportedTimeUtc": datetime.now(UTC).isoformat(),
                },
            }
            self.log.impacts[name.lower()] = stored
        return (200 if existing else 201), {}, stored

    def _get_impact(self, name: str, **_: Any) -> tuple[int, dict[str, str], Any]:
        with self.log.lock:
            found = self.log.impacts.get(name.lower())
        if found is None:
            raise ArmError(404, "ResourceNotFound", f"The workload impact '{name}' was not found.")
        return 200, {}, found
