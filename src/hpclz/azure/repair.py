"""Repair one node's machine through ARM: restart, reimage, and a Guest Health Report to Azure.

- Restart: VirtualMachines_Restart; reimage: VirtualMachines_Reimage for a VM (CycleCloud's nodes in a Flexible
  scale set are VMs), VirtualMachineScaleSetVMs_Reimage for an instance of a Uniform scale set
  (azure-rest-api-specs, Microsoft.Compute/ComputeRP/stable/2024-07-01). Both long-running; azure-mgmt-compute's
  `begin_*` pollers wait for the end.
- Guest Health Report: `PUT /subscriptions/{sub}/providers/Microsoft.Impact/workloadImpacts/{name}
  ?api-version=2023-02-01-preview` with `impactCategory` from the HPC list and `additionalProperties` naming the
  machine by `PhysicalHostName` or `VmUniqueId` (MicrosoftDocs/azure-compute-docs
  articles/azure-impact-reporting/guest-health-impact-report.md @01f777c, "REST client reporting"). No management
  SDK wraps Microsoft.Impact, so the request goes through azure-core's pipeline with the same credential, retries
  and TLS trust as every other client. PUT is createOrUpdate: filing the same name twice files one report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hpclz.azure.clients import AzureClients
from hpclz.azure.errors import azure_errors
from hpclz.errors import ExitCode, HpclzError

IMPACT_API_VERSION = "2023-02-01-preview"  # the version the Guest Health Reporting page says to use


@dataclass(frozen=True)
class Machine:
    """A node's machine in ARM: a VM, or an instance of a Uniform scale set."""

    resource_id: str

    @property
    def parts(self) -> list[str]:
        return self.resource_id.strip("/").split("/")

    @property
    def resource_group(self) -> str:
        return self.parts[3]

    @property
    def scale_set(self) -> tuple[str, str] | None:
        """(scale set, instance id) for a Uniform scale set's instance, else None."""
        lowered = [p.lower() for p in self.parts]
        if "virtualmachinescalesets" in lowered and len(self.parts) == 10:
            return self.parts[7], self.parts[9]
        return None

    @property
    def name(self) -> str:
        return self.parts[-1]


@dataclass(frozen=True)
class HealthReport:
    """What a Guest Health Report carries. `physical_host` (preferred) or `vm_unique_id` must be set."""

    name: str  # the workloadImpact's name: one per incident, so a repeated PUT files nothing new
    category: str  # Resource.Hpc.*
    description: str
    started: str  # ISO 8601, UTC: when the fault was first seen
    machine: Machine
    physical_host: str | None = None
    vm_unique_id: str | None = None
    gpu: dict[str, str] = field(default_factory=dict)  # Manufacturer, SerialNumber, ModelNumber, Location

    def body(self) -> dict[str, Any]:
        extra: dict[str, str] = {**self.gpu}
        if self.physical_host:
            extra["PhysicalHostName"] = self.physical_host
        if self.vm_unique_id:
            extra["VmUniqueId"] = self.vm_unique_id
        return {
            "properties": {
                "startDateTime": self.started,
                "impactCategory": self.category,
                "impactDescription": self.description,
                "impactedResourceId": self.machine.resource_id,
                "additionalProperties": extra,
            }
        }


class AzureRepair:
    """The three repair actions, each safe to repeat after a crash (hpclz.remediate records intent first)."""

    def __init__(self, clients: AzureClients):
        self.clients = clients

    def vm_unique_id(self, machine: Machine) -> str | None:
        """`properties.vmId` of the machine: the VmUniqueId a Guest Health Report may name it by."""
        with azure_errors(f"read {machine.resource_id}"):
            if machine.scale_set:
                vmss, instance = machine.scale_set
                vm = self.clients.compute.virtual_machine_scale_set_vms.get(machine.resource_group, vmss, instance)
            else:
                vm = self.clients.compute.virtual_machines.get(machine.resource_group, machine.name)
        return str(vm.vm_id) if getattr(vm, "vm_id", None) else None

    def restart(self, machine: Machine) -> None:
        self._act("restart", machine)

    def reimage(self, machine: Machine) -> None:
        self._act("reimage", machine)

    def _act(self, verb: str, machine: Machine) -> None:
        """begin_restart / begin_reimage on the VM, or on its instance when a scale set owns it, and wait."""
        compute = self.clients.compute
        with azure_errors(f"{verb} {machine.resource_id}"):
            if machine.scale_set:
                vmss, instance = machine.scale_set
                poller = getattr(compute.virtual_machine_scale_set_vms, f"begin_{verb}")(
                    machine.resource_group, vmss, instance
                )
            else:
                poller = getattr(compute.virtual_machines, f"begin_{verb}")(machine.resource_group, machine.name)
            poller.result()

    def report(self, report: HealthReport) -> str:
        """File (or re-file) the report; returns Azure's impactUniqueId."""
        if not (report.physical_host or report.vm_unique_id):
            raise HpclzError(
                f"health report {report.name}: no PhysicalHostName or VmUniqueId for {report.machine.resource_id}",
                exit_code=ExitCode.USAGE,
            )
        from azure.core.rest import HttpRequest

        url = (
            f"{self.clients.settings.arm_endpoint}/subscriptions/{self.clients.subscription_id}"
            f"/providers/Microsoft.Impact/workloadImpacts/{report.name}"
        )
        request = HttpRequest(
            "PUT",
            url,
            params={"api-version": IMPACT_API_VERSION},
            headers={"Content-Type": "application/json"},
            content=json.dumps(report.body()),
        )
        with azure_errors(f"file health report {report.name} ({report.category})"):
            response = self._pipeline().send_request(request, **self._transport_options())
            response.raise_for_status()
        answer = response.json()
        return str(answer.get("properties", {}).get("impactUniqueId", ""))

    def _pipeline(self) -> Any:
        from azure.core import PipelineClient
        from azure.core.pipeline.policies import BearerTokenCredentialPolicy, HeadersPolicy

        from hpclz.azure.waiting import BoundedRetryPolicy

        s = self.clients.settings
        policies = [
            HeadersPolicy(),
            BoundedRetryPolicy(
                cancel=self.clients.cancel,
                on_wait=lambda message: self.clients.on_wait(message),
                cap=s.retry_after_cap,
                retry_total=s.retry_total,
                retry_backoff_factor=s.retry_backoff,
            ),
            BearerTokenCredentialPolicy(self.clients.credential, s.cloud.scope),
        ]
        return PipelineClient(s.arm_endpoint, policies=policies)

    def _transport_options(self) -> dict[str, Any]:
        ca = self.clients.settings.ca_bundle
        return {"connection_verify": ca} if ca else {}
