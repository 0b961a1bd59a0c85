"""The Azure side of remediation: find a Slurm node's machine and restart, reimage or report it.

CycleCloud tags each node's VM with ClusterName and Name, the node's name in the cluster
(https://learn.microsoft.com/azure/cyclecloud/how-to/tag-nodes), which is how a Slurm node name becomes a
resource ID. A Guest Health Report names the machine by its VmUniqueId (`properties.vmId`), which ARM gives,
and carries the failed checks as its description (guest-health-impact-report.md @01f777c: PhysicalHostName or
VmUniqueId is required; PhysicalHostName is read only inside the VM, so it comes from the node's verify report, as
do the GPU's serial and PCIe location).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hpclz.azure.clients import AzureClients
from hpclz.azure.repair import AzureRepair, HealthReport, Machine
from hpclz.azure.run_command import find_scheduler
from hpclz.remediate.model import Incident

MAX_DESCRIPTION = 1000


@dataclass
class AzureFleet:
    clients: AzureClients
    resource_group: str
    cluster: str
    _machines: dict[str, Machine] = field(default_factory=dict)

    @property
    def repair(self) -> AzureRepair:
        return AzureRepair(self.clients)

    def machine(self, node: str) -> Machine:
        if node not in self._machines:
            self._machines[node] = Machine(find_scheduler(self.clients, self.resource_group, self.cluster, node=node))
        return self._machines[node]

    def restart(self, node: str) -> None:
        self.repair.restart(self.machine(node))

    def reimage(self, node: str) -> None:
        self.repair.reimage(self.machine(node))

    def report(self, incident: Incident) -> str:
        machine = self.machine(incident.node)
        description = "; ".join(f"{e.check_id} {e.message}" for e in incident.evidence)[:MAX_DESCRIPTION]
        return self.repair.report(
            HealthReport(
                name=incident.report_name,
                category=incident.category or "Resource.Hpc.Unhealthy.HpcGenericFailure",
                description=f"hpclz node {incident.node}: {description}",
                started=incident.detected_at,
                machine=machine,
                physical_host=incident.physical_host,
                vm_unique_id=self.repair.vm_unique_id(machine),
                gpu=gpu_fields(incident),
            )
        )


# How every verify check names a GPU in its message (hpclz.verify.probes.facts.Gpu.label).
_GPU_LABEL = re.compile(r"GPU \d+ \((?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\)")


def gpu_fields(incident: Incident) -> dict[str, str]:
    """The Guest Health Report's GPU fields for the first GPU the evidence names: "Resource.Hpc.Unhealthy.* fields
        specific to GPUs: Manufacturer, SerialNumber, ModelNumber, Location (Peripheral Component Interconnect Express
        (PCIe) location)" (guest-health-impact-report.md @01f777c; optional, and "Providing optional information can
        speed up the node recovery time"). Manufacturer is written as the page's example writes it ("Nvidia"); ModelNumber
    is left out: nvidia-smi's product name is not a model number."""
    for evidence in incident.evidence:
        found = _GPU_LABEL.search(evidence.message)
        if found and found["bus"] in incident.gpu_serials:
            return {
                "Manufacturer": "Nvidia",
                "SerialNumber": incident.gpu_serials[found["bus"]],
                "Location": found["bus"],
            }
    return {}
