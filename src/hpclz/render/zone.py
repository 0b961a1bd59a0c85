"""What every template of one landing zone shares: names, resource groups, tags, cross-deployment IDs.

Names come from hpclz.naming.NameBuilder only. Cross-deployment references are deterministic resource
IDs (`resourceId('<rg>', ...)`), never outputs, so a deployment can be planned before its dependency runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from hpclz.config.compute import NewAccounting
from hpclz.config.identity import Area, NewKeyVault
from hpclz.config.network import SUBNET_ROLES, ExistingVnet, Subnet
from hpclz.config.operations import ManagedPrometheus, NewMonitoring
from hpclz.config.root import LandingZoneConfig
from hpclz.config.storage import AzureFilesShared, NetAppShared, NetAppVolume, NewBlob, NewLustre, NewNetApp
from hpclz.errors import ExitCode, HpclzError
from hpclz.naming import CYCLECLOUD_LABEL, NameBuilder
from hpclz.render.arm import API_VERSIONS, expr, resource_id, resource_id_expr
from hpclz.render.engine import Safe
from hpclz.render.model import DATA_TAG, ENVIRONMENT_TAG, MANAGED_TAG, ZONE_TAG

# The identity every CycleCloud node boots with (CCWS's ccwLockerManagedIdentity): it reads the locker and looks up
# the shared file systems' addresses, and holds no data role. Not a config switch: without it no node can read
# cluster-init from a locker that refuses shared keys.
LOCKER_IDENTITY = "locker"
BASTION_SUBNET = "AzureBastionSubnet"
# The roles whose subnets host VMs: they get the NAT gateway for outbound traffic, no default outbound access,
# and mount the shared file systems.
VM_ROLES = ("admin", "compute")
# The private DNS zone of each private-link group ID hpclz creates endpoints for.
# Azure Files' zone: https://learn.microsoft.com/en-us/azure/private-link/private-endpoint-dns#storage
PRIVATE_DNS_ZONES = {
    "blob": "privatelink.blob.core.windows.net",
    "file": "privatelink.file.core.windows.net",
    "vault": "privatelink.vaultcore.azure.net",
}


@dataclass(frozen=True)
class SubnetView:
    role: str
    name: str
    cidr: str
    path: str
    nsg_name: str | None
    nat: bool
    spec: Subnet
    route_table: bool = False  # the default route to the hub firewall (network.hub_peering.firewall_private_ip)

    @property
    def hosts_vms(self) -> bool:
        return self.role in VM_ROLES


class Zone:
    """One landing zone, seen by the templates."""

    def __init__(self, config: LandingZoneConfig):
        self.config = config
        self.names = NameBuilder(config)
        self.location = config.metadata.location

    # --- resource groups and tags -------------------------------------------------------------
    @cached_property
    def rg(self) -> dict[str, str]:
        overrides = self.config.organization.resource_groups
        return {a.value: self.names.resource_group(a.value, getattr(overrides, a.value)) for a in Area}

    def tags(self, data: bool = False) -> dict[str, str]:
        tags = dict(self.config.metadata.tags)
        tags[ZONE_TAG] = self.config.metadata.name
        tags[MANAGED_TAG] = "true"
        tags[ENVIRONMENT_TAG] = self.config.metadata.environment.value
        if data:
            tags[DATA_TAG] = "true"
        return tags

    def meta(self, path: str, data: bool = False, tags: bool = True) -> Safe:
        """`"comments": ..., "tags": ...` for a resource: the config path that made it, and the zone's tags."""
        out = {"comments": f"hpclz: {path}"}
        body = json.dumps(out, ensure_ascii=False)[1:-1]
        if tags:
            body += ', "tags": ' + json.dumps(self.tags(data), sort_keys=True, ensure_ascii=False)
        return Safe(body)

    # --- network -------------------------------------------------------------------------------
    @cached_property
    def subnets(self) -> list[SubnetView]:
        net = self.config.network
        views = []
        for role in SUBNET_ROLES:
            spec: Subnet | None = getattr(net.vnet.subnets, role)
            if spec is None:
                continue
            name = spec.name or (BASTION_SUBNET if role == "bastion" else self.names.subnet(role))
            nsg = self.names.network_security_group(role) if spec.nsg else None
            nat = net.nat_gateway.enabled and role in VM_ROLES
            routed = self.firewall_ip is not None and role != "bastion" and not spec.delegation
            path = f"network.vnet.subnets.{role}"
            views.append(SubnetView(role, name, str(spec.cidr), path, nsg, nat, spec, route_table=routed))
        return views

    @property
    def firewall_ip(self) -> str | None:
        """The hub firewall that egress is routed to; only for a VNet hpclz creates (it owns the subnets)."""
        hub = self.config.network.hub_peering
        if hub is None or hub.firewall_private_ip is None or self.existing_vnet is not None:
            return None
        return str(hub.firewall_private_ip)

    @property
    def route_table_name(self) -> str:
        return self.names.name("route_table")

    def subnet(self, role: str) -> SubnetView:
        for view in self.subnets:
            if view.role == role:
                return view
        raise HpclzError(
            f"network.vnet.subnets.{role}: missing, but the config needs it (see `hpclz validate`)",
            exit_code=ExitCode.CONFIG_INVALID,
        )

    def has_subnet(self, role: str) -> bool:
        return any(v.role == role for v in self.subnets)

    @property
    def existing_vnet(self) -> ExistingVnet | None:
        vnet = self.config.network.vnet
        return vnet if isinstance(vnet, ExistingVnet) else None

    @cached_property
    def vnet_name(self) -> str:
        existing = self.existing_vnet
        return existing.resource_id.rstrip("/").split("/")[-1] if existing else self.names.name("virtual_network")

    @cached_property
    def vnet_id(self) -> str:
        existing = self.existing_vnet
        if existing:
            return existing.resource_id
        return resource_id_expr("Microsoft.Network/virtualNetworks", self.vnet_name, group=self.rg["network"])

    def subnet_id(self, role: str) -> str:
        name = self.subnet(role).name
        existing = self.existing_vnet
        if existing:
            return f"{existing.resource_id.rstrip('/')}/subnets/{name}"
        return resource_id_expr(
            "Microsoft.Network/virtualNetworks/subnets", self.vnet_name, name, group=self.rg["network"]
        )

    @cached_property
    def dns_zones(self) -> list[tuple[str, str]]:
        """(zone, config path that needs it) for each private endpoint hpclz creates."""
        if not self.config.network.private_dns_zones or not self.has_subnet("private_endpoints"):
            return []
        zones = []
        if self.storage_account_pe:
            zones.append((PRIVATE_DNS_ZONES["blob"], "storage.blob.private_endpoint"))
        elif self.locker_pe:
            zones.append((PRIVATE_DNS_ZONES["blob"], "compute.cyclecloud"))
        if self.shared_files:
            zones.append((PRIVATE_DNS_ZONES["file"], "storage.shared"))
        if self.key_vault_new:
            zones.append((PRIVATE_DNS_ZONES["vault"], "identity.key_vault"))
        return zones

    @property
    def mysql_dns_zone(self) -> str | None:
        """The accounting server's private DNS zone. ARM templates must bring their own, named to end with
        mysql.database.azure.com (learn.microsoft.com/azure/mysql/flexible-server/concepts-networking-vnet,
        "Use Private DNS Zone"); `<server>.private.mysql.database.azure.com` is the name the portal gives it."""
        return f"{self.mysql_server_name}.private.mysql.database.azure.com" if self.accounting_new else None

    @property
    def network_dns_zones(self) -> list[tuple[str, str]]:
        """Every private DNS zone the network deployment creates and links: the private endpoints' zones, and the
        accounting server's, which VNet integration needs whatever network.private_dns_zones says."""
        mysql = [(self.mysql_dns_zone, "compute.accounting")] if self.mysql_dns_zone else []
        return self.dns_zones + mysql

    def dns_zone_id(self, group: str) -> str:
        """The private DNS zone for endpoints of a private-link group ("blob", "vault")."""
        return resource_id_expr("Microsoft.Network/privateDnsZones", PRIVATE_DNS_ZONES[group], group=self.rg["network"])

    # --- identity ------------------------------------------------------------------------------
    @property
    def identities(self) -> list[str]:
        """The user-assigned identities this zone creates: the configured ones and the nodes' locker identity."""
        mi = self.config.identity.managed_identities
        return [role for role in ("scheduler", "compute") if getattr(mi, role)] + [LOCKER_IDENTITY]

    def identity_name(self, role: str) -> str:
        return self.names.name("managed_identity", role)

    def identity_id(self, role: str) -> str:
        """Body (no brackets) of the user-assigned identity's resource ID, from any resource group."""
        return resource_id(
            "Microsoft.ManagedIdentity/userAssignedIdentities", self.identity_name(role), group=self.rg["management"]
        )

    def identity_principal(self, role: str) -> str:
        api = API_VERSIONS["Microsoft.ManagedIdentity/userAssignedIdentities"]
        return expr(f"reference({self.identity_id(role)}, '{api}').principalId")

    @property
    def key_vault_new(self) -> NewKeyVault | None:
        kv = self.config.identity.key_vault
        return kv if isinstance(kv, NewKeyVault) else None

    @cached_property
    def key_vault_name(self) -> str:
        return self.names.name("key_vault")

    # --- storage -------------------------------------------------------------------------------
    @property
    def blob_new(self) -> NewBlob | None:
        blob = self.config.storage.blob
        return blob if isinstance(blob, NewBlob) else None

    @property
    def storage_account_pe(self) -> bool:
        blob = self.blob_new
        return bool(blob and blob.private_endpoint and self.has_subnet("private_endpoints"))

    @cached_property
    def storage_account_name(self) -> str:
        return self.names.name("storage_account")

    @cached_property
    def locker_account_name(self) -> str:
        """CycleCloud's locker has an account of its own, as in CCWS (Azure/cyclecloud-slurm-workspace@bc0fc1b:
        bicep/storage.bicep): whoever may write the cluster-init nodes run as root must not be whoever writes data."""
        return self.names.name("storage_account", CYCLECLOUD_LABEL)

    @property
    def locker_pe(self) -> bool:
        """The locker is reached through a private endpoint wherever the VNet has a subnet for them."""
        return self.has_subnet("private_endpoints")

    @property
    def lustre_new(self) -> NewLustre | None:
        lustre = self.config.storage.lustre
        return lustre if isinstance(lustre, NewLustre) else None

    @cached_property
    def lustre_name(self) -> str:
        return self.names.name("lustre")

    @property
    def netapp_new(self) -> NewNetApp | None:
        netapp = self.config.storage.netapp
        return netapp if isinstance(netapp, NewNetApp) else None

    @cached_property
    def netapp_account(self) -> str:
        return self.names.name("netapp_account")

    @cached_property
    def netapp_pool(self) -> str:
        return self.names.name("netapp_pool")

    def netapp_volume(self, volume: NetAppVolume) -> str:
        return self.names.name("netapp_volume", volume.name)

    @property
    def shared_files(self) -> AzureFilesShared | None:
        """The Azure Files NFS account for shared home and /sched; it needs the private-endpoints subnet
        (HPCLZ-STO-041 says so when it is missing)."""
        shared = self.config.storage.shared
        if isinstance(shared, AzureFilesShared) and self.has_subnet("private_endpoints"):
            return shared
        return None

    @property
    def shared_netapp(self) -> NetAppShared | None:
        """Shared home and /sched as NetApp volumes; they live in storage.netapp's pool (HPCLZ-STO-043 says so when
        storage.netapp is not new)."""
        shared = self.config.storage.shared
        return shared if isinstance(shared, NetAppShared) and self.netapp_new is not None else None

    def shared_netapp_volumes(self) -> list[tuple[str, NetAppVolume]]:
        """(role, volume) for home and sched; names hpclz-<role> (the export path /hpclz-<role>), apart from
        storage.netapp.volumes' names by HPCLZ-STO-043."""
        shared = self.shared_netapp
        if shared is None:
            return []
        sizes = {"home": shared.home_gib, "sched": shared.sched_gib}
        return [
            (role, NetAppVolume(name=f"hpclz-{role}", quota_gib=size, protocol=shared.protocol, mount_point=point))
            for (role, size), point in zip(sizes.items(), (shared.mount_point, "/sched"), strict=True)
        ]

    @cached_property
    def shared_account_name(self) -> str:
        return self.names.name("storage_account", "nfs")

    # --- accounting ----------------------------------------------------------------------------
    @property
    def accounting_new(self) -> NewAccounting | None:
        accounting = self.config.compute.accounting
        return accounting if isinstance(accounting, NewAccounting) else None

    @cached_property
    def mysql_server_name(self) -> str:
        return self.names.name("mysql_server")

    @property
    def mysql_fqdn(self) -> str:
        """What clients connect to; the docs advise the FQDN over the IP, which can change (failover, restarts)."""
        return f"{self.mysql_server_name}.mysql.database.azure.com"

    # --- monitoring ----------------------------------------------------------------------------
    @property
    def monitoring_new(self) -> NewMonitoring | None:
        mon = self.config.monitoring
        return mon if isinstance(mon, NewMonitoring) else None

    @property
    def prometheus(self) -> ManagedPrometheus | None:
        """Managed Prometheus, when on; the nodes can remote-write only with their managed identity (HPCLZ-MON-006)."""
        mon = self.monitoring_new
        if mon is None or not isinstance(mon.prometheus, ManagedPrometheus):
            return None
        return mon.prometheus

    def template_globals(self) -> dict[str, Any]:
        return {
            "zone": self,
            "config": self.config,
            "names": self.names,
            "api": API_VERSIONS,
            "rg": self.rg,
            "resource_id": resource_id_expr,
        }
