"""Live rule for an existing Azure NetApp Files account: each volume the config declares is there, speaks the
declared NFS version and exports read-write to the subnets whose nodes mount it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from ipaddress import ip_network
from typing import Any

from hpclz.config.storage import ExistingNetApp, NetAppVolume
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.live.context import LiveContext

NETAPP = ("storage", "netapp")
CLIENT_ROLES = ("admin", "compute")  # scheduler and login nodes mount what the compute nodes mount
# Export policy rule flags per protocol (ExportPolicyRule.nfsv3 / nfsv41 in the Microsoft.NetApp 2024-07-01 schema,
# src/hpclz/armschemas/schemas/2024-07-01/Microsoft.NetApp.json).
PROTOCOL_FLAG = {"NFSv3": "nfsv3", "NFSv4.1": "nfsv41"}


def _covers(allowed: str, cidr: str) -> bool:
    """allowedClients is "a comma separated string with IPv4 CIDRs, IPv4 host addresses and host names" (same
    schema); a subnet is covered when one entry contains all of it."""
    subnet = ip_network(cidr, strict=False)
    for entry in allowed.split(","):
        try:
            if subnet.subnet_of(ip_network(entry.strip(), strict=False)):  # type: ignore[arg-type]
                return True
        except (ValueError, TypeError):
            continue  # a host name or another address family
    return False


def _exports_to(props: dict[str, Any], flag: str, cidr: str) -> bool:
    rules = (props.get("exportPolicy") or {}).get("rules") or []
    return any(
        r.get(flag) and r.get("unixReadWrite") and _covers(str(r.get("allowedClients", "")), cidr) for r in rules
    )


class ExistingNetAppVolumes(Rule[LiveContext]):
    """storage.netapp.mode: existing names an account and volumes hpclz does not create. A volume that is missing,
    does not speak the declared protocol (protocolTypes) or whose export policy does not give the node subnets
    read-write access over that protocol cannot be mounted. Volume shape: azure-rest-api-specs Microsoft.NetApp
    2024-07-01 examples/Volumes_List.json (name "account/pool/volume"); protocolTypes and exportPolicy.rules as the
    Microsoft.NetApp 2024-07-01 schema defines them."""

    id = "HPCLZ-STO-103"
    severity = Severity.ERROR
    title = "An existing NetApp volume is missing or not exported to the cluster"
    fix = "Correct storage.netapp to the account's volumes, or give each an NFS export rule for the node subnets."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        netapp = ctx.loaded.config.storage.netapp
        if not isinstance(netapp, ExistingNetApp) or ctx.netapp_account is None:
            return
        if not ctx.netapp_account:
            yield self.finding(ctx, (*NETAPP, "account_resource_id"), f"{netapp.account_resource_id} does not exist")
            return
        found = {str(v.get("name", "")).rsplit("/", 1)[-1].lower(): v for v in ctx.netapp_volumes}
        for index, volume in enumerate(netapp.volumes):
            where = (*NETAPP, "volumes", index)
            body = found.get(volume.name.lower())
            if body is None:
                yield self.finding(ctx, (*where, "name"), f"the account has no volume named {volume.name}")
                continue
            yield from self._volume(ctx, where, volume, body.get("properties") or {})

    def _volume(
        self, ctx: LiveContext, where: tuple[str | int, ...], volume: NetAppVolume, props: dict[str, Any]
    ) -> Iterator[Finding]:
        protocols = props.get("protocolTypes") or ["NFSv3"]  # the schema's default
        if volume.protocol not in protocols:
            yield self.finding(
                ctx, (*where, "protocol"), f"volume {volume.name} speaks {', '.join(protocols)}, not {volume.protocol}"
            )
            return
        subnets = ctx.loaded.config.network.vnet.subnets
        for role in CLIENT_ROLES:
            cidr = str(getattr(subnets, role).cidr)
            if not _exports_to(props, PROTOCOL_FLAG[volume.protocol], cidr):
                yield self.finding(
                    ctx,
                    (*where, "name"),
                    f"volume {volume.name} exports no read-write {volume.protocol} rule to the {role} subnet {cidr}",
                )
