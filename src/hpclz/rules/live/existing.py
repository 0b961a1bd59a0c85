"""Live rules for an existing Managed Lustre file system and an existing Key Vault: what the rendered templates and
node scripts assume of them, checked against what Azure returns before anything is deployed."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from hpclz.config.identity import ExistingKeyVault
from hpclz.config.network import ExistingVnet
from hpclz.config.storage import ExistingLustre
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.live.context import LiveContext

LUSTRE = ("storage", "lustre")
VAULT = ("identity", "key_vault")
# The nodes mount "<mgs_address>@tcp:/lustrefs" (templates/cloud-init/_mounts.sh.j2): Managed Lustre's file
# system name, as its clientInfo.mountCommand shows it (azure-rest-api-specs Microsoft.StorageCache 2024-03-01
# examples/amlFilesystems_Get.json: "mount -t lustre 10.0.0.4@tcp:/lustrefs /lustre/lustrefs").
FSNAME = "lustrefs"
_MOUNT_SOURCE = re.compile(r"@tcp:/(?P<fsname>[^\s/]+)")


def _vnet_of(subnet_id: str) -> str:
    return subnet_id.lower().split("/subnets/")[0]


def _reachable_vnets(ctx: LiveContext) -> set[str]:
    """VNet IDs (lower case) the nodes reach: an existing VNet and its peers, or the hub a new VNet peers with."""
    network = ctx.loaded.config.network
    found: set[str] = set()
    if isinstance(network.vnet, ExistingVnet):
        found.add(network.vnet.resource_id.lower())
        for peering in ((ctx.existing_vnet or {}).get("properties") or {}).get("virtualNetworkPeerings") or []:
            remote = ((peering.get("properties") or {}).get("remoteVirtualNetwork") or {}).get("id")
            if remote:
                found.add(str(remote).lower())
    if network.hub_peering is not None:
        found.add(network.hub_peering.remote_vnet_id.lower())
    return found


class ExistingLustreMatches(Rule[LiveContext]):
    """storage.lustre.mode: existing is mounted by address at boot on every node; a file system that is gone, not
    Available, at another MGS address, under another file system name or in a VNet the nodes cannot reach fails
    every mount. Fields: amlFilesystems - Get (health.state, clientInfo.mgsAddress, clientInfo.mountCommand,
    filesystemSubnet), azure-rest-api-specs Microsoft.StorageCache 2024-03-01 examples/amlFilesystems_Get.json."""

    id = "HPCLZ-STO-102"
    severity = Severity.ERROR
    title = "The existing Lustre file system is not what the config declares"
    fix = "Correct storage.lustre (resource_id, mgs_address) to the file system's values in Azure."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        lustre = ctx.loaded.config.storage.lustre
        if not isinstance(lustre, ExistingLustre) or ctx.existing_lustre is None:
            return
        found = ctx.existing_lustre
        if not found:
            yield self.finding(ctx, (*LUSTRE, "resource_id"), f"{lustre.resource_id} does not exist")
            return
        props: dict[str, Any] = found.get("properties") or {}
        health = (props.get("health") or {}).get("state")
        if health != "Available":
            yield self.finding(ctx, (*LUSTRE, "resource_id"), f"the file system's health is {health}, not Available")
        yield from self._client(ctx, lustre, props.get("clientInfo") or {})
        subnet = str(props.get("filesystemSubnet") or "")
        if subnet and _vnet_of(subnet) not in _reachable_vnets(ctx):
            yield self.finding(
                ctx,
                (*LUSTRE, "resource_id"),
                f"the file system sits in {_vnet_of(subnet)}, which the zone's VNet is not peered with",
            )

    def _client(self, ctx: LiveContext, lustre: ExistingLustre, client: dict[str, Any]) -> Iterator[Finding]:
        address = client.get("mgsAddress")
        if address and address != lustre.mgs_address:
            yield self.finding(
                ctx, (*LUSTRE, "mgs_address"), f"the file system's MGS address is {address}, not {lustre.mgs_address}"
            )
        named = _MOUNT_SOURCE.search(str(client.get("mountCommand") or ""))
        if named and named.group("fsname") != FSNAME:
            yield self.finding(
                ctx,
                (*LUSTRE, "resource_id"),
                f"the file system is named {named.group('fsname')}; the nodes mount {FSNAME}",
            )


class ExistingVaultUnfit(Rule[LiveContext]):
    """identity.key_vault.mode: existing names a vault the zone does not create. It must exist. The vault hpclz
    creates is in the Azure RBAC permission model with soft delete on (templates/arm/identity); a vault in the
    access-policy model honours no role assignment on its data, the two being separate authorization systems
    (learn.microsoft.com/azure/key-vault/general/rbac-migration), and soft delete is what protects secrets from a
    mistaken delete (learn.microsoft.com/azure/key-vault/general/soft-delete-overview). hpclz itself reads no
    secret from an existing vault (HPCLZ-CMP-040 keeps the accounting password in a vault it creates), so those
    two are warnings. Vault shape: azure-rest-api-specs Microsoft.KeyVault 2023-07-01 examples/getVault.json."""

    id = "HPCLZ-IDN-102"
    severity = Severity.ERROR
    title = "The existing Key Vault is missing or weaker than the one hpclz creates"
    fix = "Correct identity.key_vault.resource_id, or switch the vault to Azure RBAC with soft delete on."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        vault = ctx.loaded.config.identity.key_vault
        if not isinstance(vault, ExistingKeyVault) or ctx.existing_vault is None:
            return
        where = (*VAULT, "resource_id")
        if not ctx.existing_vault:
            yield self.finding(ctx, where, f"{vault.resource_id} does not exist")
            return
        props = ctx.existing_vault.get("properties") or {}
        if props.get("enableRbacAuthorization") is not True:
            yield self.finding(
                ctx,
                where,
                "the vault uses access policies, not Azure RBAC: role assignments on it grant no access to its secrets",
                severity=Severity.WARNING,
            )
        if props.get("enableSoftDelete") is False:
            yield self.finding(ctx, where, "the vault has soft delete off", severity=Severity.WARNING)
