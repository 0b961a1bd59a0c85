"""Open OnDemand portal rules (PRT): what the portal VM stands on, how users sign in, who can reach it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import TYPE_CHECKING, Any

from hpclz.config.identity import NewKeyVault
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext
from hpclz.rules.nsgflow import refusal

if TYPE_CHECKING:
    from hpclz.render.zone import Zone

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
    """The portal is reachable only privately or through Bastion: its NSG lets HTTPS in from portal.allowed_cidrs
    only (and SSH from the Bastion subnet), so a public range there would publish a shell-in-the-browser to the
    Internet. Private means inside the RFC 1918 ranges (www.rfc-editor.org/rfc/rfc1918, section 3) or RFC 6598's shared address space
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
    native-client: "native client support ... requires the Standard SKU tier or higher"). Through Bastion only the
    admins reach it: the tunnel carries SSH, and the SSH forward to the portal's HTTPS needs a sign-in on the portal
    VM (MicrosoftDocs/azure-docs@b8db86a:includes/bastion-native-connect-tunnel.md l.11; docs/portal.md), so users
    need `allowed_cidrs` either way."""

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


# Open OnDemand's interactive apps listen on a port find_port picks on the compute node, by default in 2000-65535
# (OSC/ood_core@0070ddd:lib/ood_core/batch_connect/template.rb, min_port 2000, max_port 65535); the portal's proxy
# connects to it from the admin subnet.
APP_PORTS = (2000, 65535)


@dataclass(frozen=True)
class _Flow:
    """A TCP flow the portal needs: what it is for, who opens it, who takes it, on which ports."""

    purpose: str
    source: str  # subnet role
    destination: str  # subnet role
    ports: tuple[int, int]
    to_portal: bool = False  # the portal is the destination (its NIC's NSG decides too)


def _flows(ctx: ConfigContext) -> list[_Flow]:
    from hpclz.render.nsg import SLURMCTLD_PORT, SLURMD_PORT, SRUN_PORTS

    flows = [
        _Flow("slurmctld calling srun and salloc back on the portal", "admin", "admin", SRUN_PORTS, to_portal=True),
        _Flow("slurmstepd sending srun its tasks' I/O", "compute", "admin", SRUN_PORTS, to_portal=True),
        _Flow("Slurm commands on the portal reaching slurmctld", "admin", "admin", (SLURMCTLD_PORT, SLURMCTLD_PORT)),
        _Flow("srun on the portal launching tasks through slurmd", "admin", "compute", (SLURMD_PORT, SLURMD_PORT)),
        _Flow("the portal's proxy reaching interactive apps on compute nodes", "admin", "compute", APP_PORTS),
    ]
    if ctx.config.compute.login.count:
        flows.append(_Flow("the portal's shell app reaching the login node's SSH", "admin", "admin", (22, 22)))
    return flows


class PortalSlurmFlowsAllowed(Rule[ConfigContext]):
    """What the portal does beyond serving pages travels inside the VNet, and every NSG on the way must let it
    through (an NSG is stateful: only the opening direction needs a rule, learn.microsoft.com/azure/virtual-network/
    network-security-groups-overview). Slurm "requires IP connectivity bidirectionally between all hosts in each
    cluster and from any hosts where srun may be run" (slurm.schedmd.com/network.html): client commands reach
    slurmctld on 6817, srun reaches slurmd on 6818, and slurmctld and slurmstepd connect back to srun (and salloc)
    on SrunPortRange, which hpclz pins when the portal is on (hpclz.render.nsg.SRUN_PORTS). The shell app opens
    SSH on the login node, and the interactive-app proxy reaches the port an app took on its compute node (2000-65535,
    ood_core's find_port). Each flow is evaluated on the NSGs hpclz renders, the config's network.nsg_rules
    included, with Azure's default rules after them; a refused one leaves srun hanging, the shell closed, or the
    app's page blank."""

    id = "HPCLZ-PRT-006"
    severity = Severity.ERROR
    title = "An NSG refuses a flow the portal's shell, srun or interactive apps need"
    fix = (
        "Remove or narrow the network.nsg_rules entry named in the finding so it no longer denies that flow "
        "between the admin and compute subnets (or give the flow an Allow rule of higher priority)."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        from hpclz.render.zone import Zone

        config = ctx.config
        if not config.portal.enabled:
            return
        zone = Zone(config)
        if not (zone.has_subnet("admin") and zone.has_subnet("compute")):
            return
        for flow in _flows(ctx):
            for where, direction, rules in _nsgs_on_the_way(zone, flow):
                source, destination = str(zone.subnet(flow.source).cidr), str(zone.subnet(flow.destination).cidr)
                refused = refusal(rules, direction, source, destination, flow.ports)
                if refused is None:
                    continue
                port, rule = refused
                yield self.finding(
                    ctx,
                    _config_path(ctx, str(rule.get("name"))),
                    f"{flow.purpose}: {where} NSG rule {rule.get('name')} (priority "
                    f"{(rule.get('properties') or {}).get('priority')}) denies {direction.lower()} TCP {port} from "
                    f"{flow.source} ({source}) to {flow.destination} ({destination})",
                )
                break


def _nsgs_on_the_way(zone: Zone, flow: _Flow) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(which NSG, direction, its rules): the source subnet's outbound, the destination subnet's inbound, and the
    portal NIC's own when the portal is an end. Subnet NSGs are hpclz's only in a VNet it creates."""
    from hpclz.render.nsg import security_rules as subnet_rules
    from hpclz.render.portal import security_rules as portal_rules

    extra = zone.config.network.nsg_rules
    out: list[tuple[str, str, list[dict[str, Any]]]] = []
    for role, direction in ((flow.source, "Outbound"), (flow.destination, "Inbound")):
        view = zone.subnet(role)
        if view.nsg_name is not None and zone.existing_vnet is None:
            out.append((f"the {role} subnet's", direction, subnet_rules(view, extra)))
    portal_direction = "Inbound" if flow.to_portal else "Outbound"
    out.append(("the portal's", portal_direction, portal_rules(zone)))
    return out


def _config_path(ctx: ConfigContext, rule_name: str) -> tuple[str | int, ...]:
    for index, rule in enumerate(ctx.config.network.nsg_rules):
        if rule.name == rule_name:
            return ("network", "nsg_rules", index)
    return ("portal", "enabled")


# Names that are never a tenant's domain: RFC 2606 reserves example.com, example.net and example.org for documentation
# (section 3) and the TLDs .example, .test, .invalid and .localhost (section 2); RFC 6761 section 6 keeps them
# special-use. A .local suffix is multicast DNS's (RFC 6762 section 3): Entra ID verifies only "a valid Internet
# domain", and synchronizes a .local UPN to the tenant's .onmicrosoft.com domain
# (learn.microsoft.com/microsoft-365/enterprise/prepare-a-non-routable-domain-for-directory-synchronization).
PLACEHOLDER_DOMAINS = frozenset({"example.com", "example.net", "example.org"})
PLACEHOLDER_TLDS = frozenset({"example", "test", "invalid", "localhost", "local"})


def placeholder_domain(domain: str) -> bool:
    name = domain.lower().rstrip(".")
    labels = name.split(".")
    return (
        len(labels) < 2
        or labels[-1] in PLACEHOLDER_TLDS
        or any(".".join(labels[i:]) in PLACEHOLDER_DOMAINS for i in range(len(labels)))
    )


class PortalSignInDomain(Rule[ConfigContext]):
    """Open OnDemand runs a signed-in user's session as the Linux user that user_map_match's first group names, and
    without it the whole claim is the user name (OSC/ondemand@6b54ef1, tag v4.1.4, ood-portal-generator/share/
    ood_portal_example.yml l.142-147: "Lua regular expression used to map authenticated-user to system-user",
    default '.*'). The claim is the user's UPN, `alice@<domain>` (portal.oidc.user_claim; Entra ID's upn claim:
    learn.microsoft.com/entra/identity-platform/id-token-claims-reference), so hpclz maps `^([^@]+)@<user_domain>$`
    (as a Lua pattern, lower-casing the user: hpclz.render.portal._user_map), as CCWS's vars-entra.yml does with
    entra_map_match (Azure/cyclecloud-open-ondemand@1507b51). With no domain the Linux user would be
    `alice@<domain>`, a name the portal's account mirror never creates (templates/cloud-init/portal_users.py NAME);
    with a placeholder domain no real user's claim matches, and OOD refuses every sign-in."""

    id = "HPCLZ-PRT-008"
    severity = Severity.ERROR
    title = "Portal signs users in without the tenant's sign-in domain"
    fix = (
        "Set portal.oidc.user_domain to the UPN suffix your users sign in with (a verified domain of the tenant, or "
        "its initial <name>.onmicrosoft.com: az rest --url https://graph.microsoft.com/v1.0/domains)."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        portal = ctx.config.portal
        if not portal.enabled or portal.oidc is None:
            return
        domain = portal.oidc.user_domain
        path = ("portal", "oidc", "user_domain")
        if domain is None:
            yield self.finding(ctx, path, "unset: Open OnDemand would look for a Linux user named like alice@<domain>")
        elif placeholder_domain(domain):
            yield self.finding(ctx, path, f"{domain} is a reserved or placeholder name, no tenant's sign-in domain")


class PortalAndCycleCloudShareATenant(Rule[ConfigContext]):
    """Open OnDemand "maps the user to a local user account managed by CycleCloud created with the same name as the
    Microsoft Entra ID user" (learn.microsoft.com/azure/cyclecloud/how-to/ccws/open-ondemand-add-users), and CycleCloud
    binds each user record to a tenant: "If the object ID or tenant ID don't match the ones in the access token,
    CycleCloud treats it as an authentication error" (learn.microsoft.com/azure/cyclecloud/how-to/user-authentication).
    A portal signing users in from another tenant than CycleCloud's app serves people CycleCloud gives no node account,
    so every session they start fails."""

    id = "HPCLZ-PRT-007"
    severity = Severity.ERROR
    title = "Portal signs users in from another tenant than CycleCloud's"
    fix = (
        "Register both apps in the tenant your users sign in to, and set the same tenant_id in portal.oidc and "
        "identity.cyclecloud_entra."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        portal, entra = ctx.config.portal, ctx.config.identity.cyclecloud_entra
        if not portal.enabled or portal.oidc is None or entra is None:
            return
        if portal.oidc.tenant_id.lower() != entra.tenant_id.lower():
            yield self.finding(
                ctx,
                ("portal", "oidc", "tenant_id"),
                f"{portal.oidc.tenant_id} is not identity.cyclecloud_entra.tenant_id {entra.tenant_id}: the portal's "
                "users get no account on the cluster",
            )


PORTAL_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    PortalNeedsSharedStorage,
    PortalNeedsSignIn,
    PortalPrivateOnly,
    PortalUnreachable,
    PortalSecretInVault,
    PortalSlurmFlowsAllowed,
    PortalSignInDomain,
    PortalAndCycleCloudShareATenant,
)
