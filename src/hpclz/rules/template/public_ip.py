"""Public IPs on VM network interfaces: nothing hpclz creates is reachable from the Internet by address."""

from __future__ import annotations

from collections.abc import Iterable

from hpclz.arm.walk import as_dict, as_list
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext

NIC = "microsoft.network/networkinterfaces"


class NoPublicIpOnNics(Rule[TemplateContext]):
    """Every VM the landing zone creates (the CycleCloud server, the Open OnDemand portal) is reached through
    Bastion or a private network, never by a public address: a NIC whose ip configuration names a
    `publicIPAddress` (Microsoft.Network networkInterfaces, properties.ipConfigurations[].properties.publicIPAddress)
    puts the VM on the Internet whatever its NSG says today. CCWS's portal template offers the same switch and
    defaults it off (Azure/cyclecloud-open-ondemand templates/OpenOnDemand.txt, `UsePublicNetwork = false`)."""

    id = "HPCLZ-TPL-047"
    severity = Severity.ERROR
    title = "Network interface has a public IP address"
    fix = "Drop the publicIPAddress; reach the VM through Bastion (`az network bastion tunnel`) or the hub."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in ctx.resources:
            if found.type.lower() != NIC:
                continue
            configs = as_list(as_dict(found.resource.get("properties")).get("ipConfigurations"))
            for index, config in enumerate(configs):
                props = as_dict(as_dict(config).get("properties"))
                if props.get("publicIPAddress") is not None:
                    path = (*found.path, "properties", "ipConfigurations", index, "properties", "publicIPAddress")
                    yield self.finding(ctx, path, f"{found.name}: ip configuration {index} has a public IP address")
