"""Network: VNet and subnets, NSGs, Bastion, NAT gateway, private DNS, hub peering."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from hpclz.config.base import ResourceId, StrictModel, policy
from hpclz.config.constraints import Integer, unique_by
from hpclz.config.flowlogs import FlowLogs


class Subnet(StrictModel):
    name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$",
        description="Subnet name; empty means the naming convention (snet-<name>-<role>).",
        json_schema_extra=policy("replace"),
    )
    # ARM refuses a new range while the subnet holds anything (InUseSubnetCannotBeUpdated), and a landing
    # zone's subnets always hold something: https://learn.microsoft.com/azure/virtual-network/virtual-network-manage-subnet
    cidr: IPv4Network = Field(json_schema_extra=policy("not_allowed"))
    nsg: bool = Field(default=True, description="Attach a network security group that denies Internet inbound.")
    delegation: str | None = Field(
        default=None, examples=["Microsoft.NetApp/volumes"], json_schema_extra=policy("not_allowed")
    )
    service_endpoints: list[str] = Field(default_factory=list, examples=[["Microsoft.Storage"]])


class Subnets(StrictModel):
    """One subnet per role. Only `admin` and `compute` are always required."""

    admin: Subnet = Field(description="Scheduler, login and CycleCloud server.")
    compute: Subnet = Field(description="Slurm compute nodes; size it for every partition's max_nodes.")
    lustre: Subnet | None = Field(default=None, description="Azure Managed Lustre (required when Lustre is new).")
    netapp: Subnet | None = Field(
        default=None, description="Azure NetApp Files; must be delegated to Microsoft.NetApp/volumes."
    )
    private_endpoints: Subnet | None = Field(default=None, description="Private endpoints for storage and Key Vault.")
    database: Subnet | None = Field(
        default=None,
        description="The Slurm accounting MySQL server (compute.accounting mode new); must be delegated to "
        "Microsoft.DBforMySQL/flexibleServers, /29 or larger.",
    )
    bastion: Subnet | None = Field(default=None, description="Must be named AzureBastionSubnet and be /26 or larger.")


SUBNET_ROLES: tuple[str, ...] = tuple(Subnets.model_fields)


class NewVnet(StrictModel):
    mode: Literal["new"] = "new"
    address_space: list[IPv4Network] = Field(min_length=1, json_schema_extra=policy("replace"))
    subnets: Subnets
    dns_servers: list[str] = Field(default_factory=list)


class ExistingVnet(StrictModel):
    """Bring your own VNet: hpclz creates nothing in it but NSGs, and checks the subnets you name."""

    mode: Literal["existing"] = "existing"
    resource_id: ResourceId
    address_space: list[IPv4Network] = Field(min_length=1, description="As deployed; used for checks only.")
    subnets: Subnets


Vnet = Annotated[NewVnet | ExistingVnet, Field(discriminator="mode")]


class NsgRule(StrictModel):
    """An extra security rule, added to the NSG of one subnet role."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
    subnet: Literal["admin", "compute", "lustre", "netapp", "private_endpoints", "database"]
    priority: Integer = Field(ge=100, le=4096)
    direction: Literal["Inbound", "Outbound"] = "Inbound"
    access: Literal["Allow", "Deny"] = "Allow"
    protocol: Literal["Tcp", "Udp", "Icmp", "*"] = "Tcp"
    source_address_prefix: str = "VirtualNetwork"
    source_port_range: str = "*"
    destination_address_prefix: str = "VirtualNetwork"
    destination_port_range: str = Field(default="*", min_length=1, examples=["22", "27000-27010", "80,443"])


class Bastion(StrictModel):
    enabled: bool = True
    sku: Literal["Basic", "Standard", "Premium"] = "Standard"


class NatGateway(StrictModel):
    enabled: bool = Field(default=True, description="Outbound Internet for nodes without public IPs.")
    idle_timeout_minutes: Integer = Field(default=4, ge=4, le=120)


class HubPeering(StrictModel):
    remote_vnet_id: ResourceId
    remote_address_space: list[IPv4Network] = Field(min_length=1)
    use_remote_gateways: bool = False
    hub_gateway: bool = Field(
        default=False,
        description="The hub has a VPN or ExpressRoute gateway and allows gateway transit on its side of the "
        "peering; use_remote_gateways needs it (HPCLZ-NET-012).",
    )
    allow_forwarded_traffic: bool = True
    firewall_private_ip: IPv4Address | None = Field(
        default=None,
        examples=["10.0.1.4"],
        description="Route 0.0.0.0/0 from the landing-zone subnets to the hub firewall (a route table with a "
        "VirtualAppliance default route on every subnet but Bastion and delegated ones).",
    )


class Network(StrictModel):
    vnet: Vnet
    nsg_rules: Annotated[list[NsgRule], AfterValidator(unique_by("name", "NSG rule"))] = Field(default_factory=list)
    bastion: Bastion = Field(default_factory=Bastion)
    nat_gateway: NatGateway = Field(default_factory=NatGateway)
    private_dns_zones: bool = Field(
        default=True, description="Create and link privatelink DNS zones for the private endpoints."
    )
    hub_peering: HubPeering | None = None
    accelerated_networking: bool = Field(default=True, json_schema_extra=policy("restart_nodes"))
    flow_logs: FlowLogs = Field(default_factory=FlowLogs, description="VNet flow logs (Network Watcher).")
