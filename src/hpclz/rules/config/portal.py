"""Open OnDemand portal rules (PRT): what the portal VM stands on, how users sign in, who can reach it."""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Network

from hpclz.config.identity import NewKeyVault
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

PRIVATE_BLOCKS = tuple(
    IPv4Network(block) for block in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
)


class PortalNeedsSharedStorage(Rule[ConfigContext]):
    """The portal is a Slurm client outside CycleCloud: it finds the cluster's munge key and slurm.conf under
    /sched/<cluster>/ (cyclecloud-slurm 3.0.11 keeps them there: Azure/cyclecloud-slurm@b26ab06:
    slurm/install/install.py, `config_dir = f"/sched/{slurm_cluster_name}"`) and shows users the home directories
    their jobs write (cyclecloud-open-ondemand README, Prerequisites: "NFS home directories accessible from both the
    cluster and the OOD VM"). Without storage.shared both live on the scheduler's own disks, out of its reach."""

    id = "HPCLZ-PRT-001"
    severity = Severity.ERROR
    title = "Portal without shared home and /sched"
    fix = "Set storage.shared (mode: azure_files, or existing for an NFS server of your own), or portal.enabled: false."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        portal = ctx.config.portal
        if portal.enabled and ctx.config.storage.shared.mode == "disabled":
            yield self.finding(ctx, ("portal", "enabled"), "the portal needs storage.shared for /home and /sched")


class PortalNeedsSignIn(Rule[ConfigContext]):
    """CCWS's portal accepts Entra ID sign-in only ("The UI requires Entra ID": Azure/cyclecloud-slurm-workspace
    bicep/install.sh; cyclecloud-open-ondemand vars-entra.yml); an Open OnDemand without an authenticator would
    fall back to Apache basic auth with a password file, which this landing zone never writes."""

    id = "HPCLZ-PRT-002"
    severity = Severity.ERROR
    title = "Portal without Entra ID sign-in"
    fix = "Register an app (docs/portal.md) and set portal.oidc.tenant_id and portal.oidc.client_id."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        portal = ctx.config.portal
        if portal.enabled and portal.oidc is None:
            yield self.finding(ctx, ("portal",), "portal.oidc is not set: nobody could sign in")


class PortalPrivateOnly(Rule[ConfigContext]):
    """The portal is reachable only privately or through Bastion: its NSG lets HTTPS in from the Bastion subnet and
    portal.allowed_cidrs, so a public range there would publish a shell-in-the-browser to the Internet. Private
    means inside the RFC 1918 ranges (www.rfc-editor.org/rfc/rfc1918, section 3) or RFC 6598's shared address space
    (100.64.0.0/10, used by carrier and some VPN address pools); Python's own `is_private` is not used, because it
    also counts the documentation ranges, which are not private networks."""

    id = "HPCLZ-PRT-003"
    severity = Severity.ERROR
    title = "Portal open to a public address range"
    fix = "List only private ranges (hub, VPN, on-premises over ExpressRoute) in portal.allowed_cidrs."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for index, cidr in enumerate(ctx.config.portal.allowed_cidrs):
            if not any(cidr.subnet_of(block) for block in PRIVATE_BLOCKS):
                yield self.finding(ctx, ("portal", "allowed_cidrs", index), f"{cidr} is not a private range")


class PortalUnreachable(Rule[ConfigContext]):
    """With no Bastion and no allowed range, the portal's NSG lets nobody in; the Bastion tunnel
    (`az network bastion tunnel`) also needs the Standard or Premium SKU (learn.microsoft.com/azure/bastion/
    native-client: "native client support ... requires the Standard SKU tier or higher")."""

    id = "HPCLZ-PRT-004"
    severity = Severity.ERROR
    title = "Portal reachable from nowhere"
    fix = "Enable network.bastion (Standard SKU) or list the private ranges users come from in portal.allowed_cidrs."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        portal, network = ctx.config.portal, ctx.config.network
        if not portal.enabled or portal.allowed_cidrs:
            return
        has_bastion = network.bastion.enabled and network.vnet.subnets.bastion is not None
        if not has_bastion:
            yield self.finding(
                ctx, ("portal", "enabled"), "no Bastion and no portal.allowed_cidrs: nobody can reach it"
            )
        elif network.bastion.sku == "Basic":
            yield self.finding(
                ctx, ("network", "bastion", "sku"), "Bastion Basic cannot tunnel to the portal (no native client)"
            )


class PortalSecretInVault(Rule[ConfigContext]):
    """The portal reads its client secret from the zone's Key Vault with its own identity at boot, so the secret
    never sits in a template, customData or state. The vault takes no public traffic (identity template:
    publicNetworkAccess Disabled), so only hpclz, writing identity.key_vault.secrets at deploy time, can put it
    there."""

    id = "HPCLZ-PRT-005"
    severity = Severity.ERROR
    title = "Portal client secret not among the Key Vault's secrets"
    fix = "Add it to identity.key_vault.secrets (mode: new), e.g. `ood-client-secret: ${env:OOD_CLIENT_SECRET}`."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        portal = ctx.config.portal
        name = portal.oidc.client_secret_name if portal.enabled and portal.oidc else None
        if name is None:
            return
        vault = ctx.config.identity.key_vault
        if not isinstance(vault, NewKeyVault) or name not in vault.secrets:
            yield self.finding(
                ctx, ("portal", "oidc", "client_secret_name"), f"{name!r} is not in identity.key_vault.secrets"
            )


PORTAL_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    PortalNeedsSharedStorage,
    PortalNeedsSignIn,
    PortalPrivateOnly,
    PortalUnreachable,
    PortalSecretInVault,
)
