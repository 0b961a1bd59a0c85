"""The Azure side of remediation: find a Slurm node's machine and restart, reimage or report it.

CycleCloud tags each node's VM with ClusterName and Name, the node's name in the cluster
(https://learn.microsoft.com/azure/cyclecloud/how-to/tag-nodes), which is how a Slurm node name becomes a
resource ID. A Guest Health Report names the machine by its VmUniqueId (`properties.vmId`), which ARM gives,
and carries the failed checks as its description (guest-health-impact-report.md @01f777c: PhysicalHostName or
VmUniqueId is required; PhysicalHostName is read only inside the VM).
"""

from __future__ import annotations

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
                vm_unique_id=self.repair.vm_unique_id(machine),
            )
        )
