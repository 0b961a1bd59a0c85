"""Open OnDemand portal: an optional web front end to the Slurm cluster, as CycleCloud Workspace for Slurm offers.

CCWS builds it as a CycleCloud cluster from the Azure/cyclecloud-open-ondemand project (templates/OpenOnDemand.txt);
hpclz renders it as one ARM VM of its own (hpclz.render.portal), because hpclz already owns the VNet, the shared
NFS home and /sched that the portal stands on. Sign-in is Entra ID through OpenID Connect; the app registration is
a Microsoft Graph object outside ARM, so the config only names it (docs/portal.md gives the `az ad app` commands).
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated, Literal

from pydantic import Field

from hpclz.config.base import Guid, StrictModel, policy
from hpclz.config.compute import IMAGE_URN_PATTERN, VM_SIZE_PATTERN

# Ubuntu 22.04: cyclecloud-slurm 4.0.9 publishes its Slurm packages for noble, jammy and focal
# (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/ubuntu.sh:72-77), and the
# portal runs the same Slurm client as the cluster; Open OnDemand 4.1 supports 22.04 (cyclecloud-open-ondemand
# README, "Supported OS").
DEFAULT_PORTAL_IMAGE = "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest"


class PortalOidc(StrictModel):
    """Entra ID sign-in (OpenID Connect) through an app registration made beforehand (docs/portal.md)."""

    tenant_id: Guid = Field(description="Entra ID tenant of the app registration.", json_schema_extra=policy("replace"))
    client_id: Guid = Field(
        description="Application (client) ID of the app registration.", json_schema_extra=policy("replace")
    )
    client_secret_name: str | None = Field(
        default=None,
        pattern=r"^[0-9a-zA-Z-]{1,127}$",
        description=(
            "Name of the app's client secret in identity.key_vault.secrets: the portal reads it from Key Vault at "
            "boot and signs in with the code flow. Empty: the ID-token flow CCWS uses, which needs no secret."
        ),
        json_schema_extra=policy("replace"),
    )
    user_claim: Literal["upn", "preferred_username", "email", "unique_name"] = Field(
        default="upn",
        description="ID-token claim that names the user (CCWS's default: upn; Entra ID token claims: "
        "learn.microsoft.com/entra/identity-platform/id-token-claims-reference).",
        json_schema_extra=policy("replace"),
    )
    # A DNS name of two labels or more (a verified domain of the tenant, or its <name>.onmicrosoft.com one); reserved and
    # placeholder names are refused by HPCLZ-PRT-008, which also refuses an unset domain on an enabled portal.
    user_domain: str | None = Field(
        default=None,
        pattern=r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]{0,61}[A-Za-z0-9]$",
        max_length=253,
        examples=["contoso.com"],
        description=(
            "The UPN suffix users sign in with: Open OnDemand maps User@<user_domain> to the Linux user `user`, "
            "lower-cased (user_map_match). Required with an enabled portal (HPCLZ-PRT-008)."
        ),
        json_schema_extra=policy("replace"),
    )


class Portal(StrictModel):
    """An Open OnDemand VM wired to the Slurm cluster: private only, no public IP."""

    enabled: bool = Field(default=False, description="Create the Open OnDemand portal VM.")
    vm_size: str = Field(
        # CCWS's OpenOnDemand template defaults to Standard_D4as_v4 (cyclecloud-open-ondemand templates/OpenOnDemand.txt).
        default="Standard_D4as_v5",
        pattern=VM_SIZE_PATTERN,
        json_schema_extra=policy("restart_nodes"),
    )
    image: str = Field(
        default=DEFAULT_PORTAL_IMAGE,
        pattern=IMAGE_URN_PATTERN,
        description="Marketplace URN of an Ubuntu 22.04 image: the boot script installs the jammy builds of Slurm.",
        json_schema_extra=policy("replace"),
    )
    server_name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*$",
        max_length=253,
        examples=["ood.hpc.contoso.com"],
        description=(
            "Private DNS name users reach the portal by over the hub or VPN (its certificate's name, and a redirect "
            "URI to register). Empty: only the admins' SSH forward through Bastion, https://localhost:9443."
        ),
        json_schema_extra=policy("replace"),
    )
    allowed_cidrs: list[Annotated[IPv4Network, Field(examples=["10.0.0.0/16"])]] = Field(
        default_factory=list,
        description=(
            "Private ranges (hub, VPN) allowed to reach the portal on HTTPS 443, the only ones: Bastion's tunnel "
            "carries no HTTPS, so admins come through it by SSH (docs/portal.md). Never the Internet (HPCLZ-PRT-003)."
        ),
    )
    oidc: PortalOidc | None = Field(
        default=None, description="Entra ID sign-in; required when enabled (HPCLZ-PRT-002)."
    )
