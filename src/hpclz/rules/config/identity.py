"""Identity rules: principal IDs, least privilege, the admin SSH key, Key Vault protection."""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Iterable

from hpclz.config.identity import BuiltinRole, NewKeyVault, secret_parameter_name
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext
from hpclz.secretscan import ENV_REFERENCE

ZERO_GUID = "00000000-0000-0000-0000-000000000000"
PRIVILEGED = {BuiltinRole.OWNER, BuiltinRole.USER_ACCESS_ADMINISTRATOR}


class NoPlaceholderPrincipal(Rule[ConfigContext]):
    """The all-zero GUID is the placeholder in examples; no Entra ID object has it, so the role assignment fails."""

    id = "HPCLZ-IDN-001"
    severity = Severity.ERROR
    title = "Principal ID is the all-zero placeholder GUID"
    fix = "Replace it with the object ID of a real Entra ID group or principal (az ad group show -g NAME)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        identity = ctx.config.identity
        for role, guids in identity.groups:
            for i, guid in enumerate(guids):
                if guid == ZERO_GUID:
                    yield self.finding(
                        ctx, ("identity", "groups", role, i), f"identity.groups.{role} holds the placeholder GUID"
                    )
        for i, extra in enumerate(identity.extra_role_assignments):
            if extra.principal_id == ZERO_GUID:
                yield self.finding(
                    ctx,
                    ("identity", "extra_role_assignments", i, "principal_id"),
                    "role assignment to the placeholder GUID",
                )


class PrincipalInOneRole(Rule[ConfigContext]):
    """A group listed twice in one role, or in several cluster roles, gets the union of their grants; that is
    almost always a copy-paste slip and hides who really holds admin rights."""

    id = "HPCLZ-IDN-002"
    severity = Severity.WARNING
    title = "Principal listed more than once across cluster roles"
    fix = "List each group once, in the one role it needs (admins, users or readers)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        seen: dict[str, str] = {}
        for role, guids in ctx.config.identity.groups:
            for i, guid in enumerate(guids):
                if guid in seen:
                    yield self.finding(
                        ctx, ("identity", "groups", role, i), f"{guid} is in {role} and already in {seen[guid]}"
                    )
                else:
                    seen[guid] = role


class NoPrivilegedExtraRoles(Rule[ConfigContext]):
    """Owner and User Access Administrator can grant access to anyone, far beyond running a cluster
    (CAF identity guidance: least privilege, no standing owner rights)."""

    id = "HPCLZ-IDN-003"
    severity = Severity.ERROR
    title = "Extra role assignment grants Owner or User Access Administrator"
    fix = "Use Contributor or a narrower built-in role; grant access rights through PIM outside hpclz."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, extra in enumerate(ctx.config.identity.extra_role_assignments):
            if extra.role in PRIVILEGED:
                yield self.finding(
                    ctx,
                    ("identity", "extra_role_assignments", i, "role"),
                    f"{extra.principal_id} would get {extra.role.value} on the {extra.area.value} resource group",
                )


def _ssh_strings(blob: bytes) -> list[bytes]:
    """The SSH wire format: uint32 length-prefixed strings (RFC 4253 section 6.6)."""
    out, offset = [], 0
    while offset < len(blob):
        if offset + 4 > len(blob):
            raise ValueError("truncated length")
        (length,) = struct.unpack(">I", blob[offset : offset + 4])
        offset += 4
        if offset + length > len(blob):
            raise ValueError("truncated field")
        out.append(blob[offset : offset + length])
        offset += length
    return out


def ssh_key_problem(text: str, accepted: list[str], min_rsa_bits: int) -> str | None:
    """Why Azure would refuse this OpenSSH public key, or None when it is acceptable."""
    parts = text.split()
    if len(parts) < 2:
        return "is not an OpenSSH public key ('<type> <base64> [comment]')"
    kind, data = parts[0], parts[1]
    if kind not in accepted:
        return f"is of type {kind}; Azure accepts only {' and '.join(accepted)}"
    try:
        fields = _ssh_strings(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError) as exc:
        return f"has a damaged base64 body ({exc})"
    if not fields or fields[0] != kind.encode():
        inner = fields[0].decode(errors="replace") if fields else "nothing"
        return f"says {kind} but its body holds a {inner} key"
    if kind == "ssh-rsa":
        if len(fields) != 3:
            return "has a malformed RSA body"
        bits = int.from_bytes(fields[2], "big").bit_length()
        if bits < min_rsa_bits:
            return f"is a {bits}-bit RSA key; Azure needs at least {min_rsa_bits} bits"
    if kind == "ssh-ed25519" and (len(fields) != 2 or len(fields[1]) != 32):
        return "has a malformed Ed25519 body"
    return None


class SshKeyAccepted(Rule[ConfigContext]):
    """Azure accepts SSH-2 RSA keys of 2048 bits or more and Ed25519 keys for Linux VMs; ECDSA and DSA are
    refused at deployment. The key body is decoded to catch a pasted key whose type does not match its prefix.
    Source: learn.microsoft.com/azure/virtual-machines/linux/create-ssh-keys-detailed#supported-ssh-key-formats"""

    id = "HPCLZ-IDN-004"
    severity = Severity.ERROR
    title = "Admin SSH key is not a key Azure accepts"
    fix = "Use `ssh-keygen -t ed25519` (or -t rsa -b 4096) and paste the whole .pub line."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        facts = ctx.catalog.service("ssh")
        problem = ssh_key_problem(ctx.config.identity.ssh_public_key, facts["accepted_types"], facts["min_rsa_bits"])
        if problem:
            yield self.finding(ctx, ("identity", "ssh_public_key"), f"identity.ssh_public_key {problem}")


class ProdKeyVaultPurgeProtection(Rule[ConfigContext]):
    """Without purge protection a deleted vault and its secrets can be purged at once, with no recovery window."""

    id = "HPCLZ-IDN-005"
    severity = Severity.WARNING
    title = "Production Key Vault without purge protection"
    fix = "Set identity.key_vault.purge_protection: true (it cannot be turned off later)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        vault = ctx.config.identity.key_vault
        if ctx.is_prod and vault.mode == "new" and not vault.purge_protection:
            yield self.finding(ctx, ("identity", "key_vault", "purge_protection"), "the production vault can be purged")


class CheckpointIdentity(Rule[ConfigContext]):
    """Compute nodes write checkpoints with their managed identity; without it jobs need storage keys, which
    hpclz never hands out."""

    id = "HPCLZ-IDN-006"
    severity = Severity.WARNING
    title = "Checkpoint container but no compute managed identity"
    fix = "Set identity.managed_identities.compute: true."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        if ctx.has_checkpoint_container and not ctx.config.identity.managed_identities.compute:
            yield self.finding(
                ctx,
                ("identity", "managed_identities", "compute"),
                "compute nodes have no managed identity to write to the checkpoints container",
            )


class SecretNamesDistinct(Rule[ConfigContext]):
    """Key Vault secret names and ARM parameter names are compared without case, and each secret travels as a
    secureString parameter named after it without hyphens: `db-key` and `dbKey` (or `Licence` and `licence`)
    would overwrite each other."""

    id = "HPCLZ-IDN-007"
    severity = Severity.ERROR
    title = "Two Key Vault secrets collide"
    fix = "Rename one of the secrets so their names differ by more than case and hyphens."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        vault = ctx.config.identity.key_vault
        if not isinstance(vault, NewKeyVault):
            return
        seen: dict[str, str] = {}
        for name in vault.secrets:
            key = secret_parameter_name(name).lower()
            if key in seen:
                yield self.finding(
                    ctx,
                    ("identity", "key_vault", "secrets", name),
                    f"secret {name!r} collides with {seen[key]!r} (both become parameter "
                    f"{secret_parameter_name(name)})",
                )
            seen.setdefault(key, name)


class GroupsNeedEntraLogin(Rule[ConfigContext]):
    """identity.groups reach the cluster through the VM login roles, which let nobody in without Microsoft Entra ID
    SSH login: the AADSSHLoginForLinux extension and a system-assigned identity on the VM
    (learn.microsoft.com/entra/identity/devices/howto-vm-sign-in-azure-ad-linux). With identity.entra_login off,
    render grants no VM login role, so the groups' members cannot sign in with their Entra ID accounts. Either
    way CycleCloud's own nodes are reached through CycleCloud's user management, which creates local accounts for
    CycleCloud users (learn.microsoft.com/azure/cyclecloud/how-to/user-access): CycleCloud creates their scale
    sets itself, and its cluster templates install no VM extension on them."""

    id = "HPCLZ-IDN-008"
    severity = Severity.WARNING
    title = "Entra ID groups are set but Entra ID login is off"
    fix = "Set identity.entra_login: true, or remove identity.groups.admins and identity.groups.users."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        identity = ctx.config.identity
        if identity.entra_login:
            return
        for role in ("admins", "users"):
            groups = getattr(identity.groups, role)
            if groups:
                yield self.finding(
                    ctx,
                    ("identity", "entra_login"),
                    f"identity.groups.{role} names {len(groups)} group(s), but entra_login is false: "
                    "their members cannot sign in with Entra ID",
                )


class GroupsNeedCycleCloudEntra(Rule[ConfigContext]):
    """The cluster's nodes (scheduler, login nodes, partitions) are CycleCloud's: CycleCloud creates their scale
    sets, so hpclz's VM login roles and the Entra ID SSH extension reach only the CycleCloud server. CycleCloud's
    built-in user management puts a local account on every node for each CycleCloud user with node access
    (learn.microsoft.com/azure/cyclecloud/how-to/user-access), and CycleCloud knows Entra ID users, with the node
    roles the app gives them, only when it signs them in with Entra ID
    (learn.microsoft.com/azure/cyclecloud/how-to/user-authentication; hpclz.render.entra). Without
    identity.cyclecloud_entra no member of the admins or users groups gets an account on any node: the cluster the
    config describes has no user but the VM agent's `cyclecloud` service account."""

    id = "HPCLZ-IDN-009"
    severity = Severity.ERROR
    title = "Entra ID groups are set but CycleCloud does not sign users in with Entra ID"
    fix = (
        "Register CycleCloud's Entra ID app (docs/entra-login.md) and set identity.cyclecloud_entra "
        "{client_id, tenant_id}; give the groups the app roles `hpclz deploy` prints."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        identity = ctx.config.identity
        groups = identity.groups.admins + identity.groups.users
        if groups and identity.cyclecloud_entra is None:
            yield self.finding(
                ctx,
                ("identity", "groups"),
                f"identity.groups names {len(groups)} admin/user group(s), but identity.cyclecloud_entra is unset: "
                "none of their members gets an account on any of the cluster's nodes",
            )


class VaultSecretIsAReference(Rule[ConfigContext]):
    """A secret's value written into the config lives in clear text in a file that is copied, committed and
    shared; hpclz keeps it out of logs, state and rendered files, but not out of the config itself. Written as
    `${env:NAME}`, deploy reads it from the environment and stores it in Key Vault as a secret of that name
    (learn.microsoft.com/azure/key-vault/secrets/about-secrets), where nodes read it with their identity."""

    id = "HPCLZ-IDN-010"
    severity = Severity.ERROR
    title = "Key Vault secret written in clear text in the config"
    fix = "Write the secret as ${env:NAME} and export NAME where deploy runs; deploy stores it in Key Vault."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        vault = ctx.config.identity.key_vault
        if not isinstance(vault, NewKeyVault):
            return
        for name, value in vault.secrets.items():
            if not ENV_REFERENCE.match(value.get_secret_value()):
                env = name.upper().replace("-", "_")
                # The message never repeats the value: it is a secret.
                yield self.finding(
                    ctx,
                    ("identity", "key_vault", "secrets", name),
                    f"secret {name} is written in clear text; write `{name}: ${{env:{env}}}` and export {env} "
                    f"(deploy stores it in Key Vault as secret {name})",
                )


class NoUserReachesCycleCloudIdentity(Rule[ConfigContext]):
    """Who may sign in to a VM holds that VM's managed identities: any process there gets their tokens from the
    instance metadata service (learn.microsoft.com/entra/identity/managed-identities-azure-resources/
    how-to-use-vm-token). The CycleCloud server sits in the compute group with CycleCloud's identity, which holds
    Virtual Machine Contributor on that group (`Microsoft.Compute/virtualMachines/*`: run command as root on every
    VM), Managed Identity Operator on the nodes' identities and blob writes on the locker
    (learn.microsoft.com/azure/role-based-access-control/built-in-roles/compute, /identity, /storage). So no principal
    but the cluster admins may hold a VM login role, or a role that manages VMs, on the compute group: the analysis
    follows every role assignment hpclz renders there (hpclz.render.roles.assignments), extra ones included."""

    id = "HPCLZ-IDN-011"
    severity = Severity.ERROR
    title = "A non-admin principal can sign in to the CycleCloud server and take its identity"
    fix = "Grant VM login and VM management roles on the compute area only to identity.groups.admins."

    REACH = frozenset(
        {
            BuiltinRole.VM_USER_LOGIN,
            BuiltinRole.VM_ADMIN_LOGIN,
            BuiltinRole.VM_CONTRIBUTOR,
            BuiltinRole.CONTRIBUTOR,
            BuiltinRole.OWNER,
        }
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        # Imported here: render loads the template engine, which `hpclz validate` needs for nothing else.
        from hpclz.render.roles import ROLE_IDS, assignments
        from hpclz.render.zone import Zone

        identity = ctx.config.identity
        if not identity.managed_identities.scheduler:
            return
        admins = {g.lower() for g in identity.groups.admins}
        names = {role_id: role for role, role_id in ROLE_IDS.items()}
        for a in assignments(Zone(ctx.config), "compute"):
            role = next((r for rid, r in names.items() if rid in a.role_definition_id), None)
            if role not in self.REACH or a.scope is not None or a.principal_type == "ServicePrincipal":
                continue
            if a.principal_id.lower() in admins:
                continue
            yield self.finding(
                ctx,
                _path(a.path),
                f"{a.principal_id} holds {role} on the compute group: it can sign in to (or run commands on) the "
                "CycleCloud server and use CycleCloud's identity (Virtual Machine Contributor: run command as root "
                "on every VM)",
            )


# What each built-in role lets its holder do beyond its job, from the roles' JSON in the Azure RBAC built-in roles
# reference (learn.microsoft.com/azure/role-based-access-control/built-in-roles): run a command as root on a VM
# (Microsoft.Compute/virtualMachines/runCommands/write: Owner's and Contributor's "*", Virtual Machine Contributor's
# "Microsoft.Compute/virtualMachines/*"), assign roles (Microsoft.Authorization/roleAssignments/write: Owner's "*",
# User Access Administrator's "Microsoft.Authorization/*"; Contributor's notActions take it out), attach a user-assigned
# identity to a VM it makes and so take that identity (Microsoft.ManagedIdentity/userAssignedIdentities/assign/action:
# "*", Managed Identity Operator's "userAssignedIdentities/*/assign/action") and read secret values
# (Microsoft.KeyVault/vaults/secrets/getSecret/action, a data action: Key Vault Administrator's "vaults/*", Key Vault
# Secrets User). tests/rules/test_reach_capabilities.py checks this table against the real role JSON.
RUN_COMMAND, ASSIGN_ROLES, TAKE_IDENTITY, READ_SECRETS = (
    "run command",
    "assign roles",
    "take an identity",
    "read secrets",
)
CAPABILITIES: dict[BuiltinRole, frozenset[str]] = {
    BuiltinRole.OWNER: frozenset({RUN_COMMAND, ASSIGN_ROLES, TAKE_IDENTITY}),
    BuiltinRole.CONTRIBUTOR: frozenset({RUN_COMMAND, TAKE_IDENTITY}),
    BuiltinRole.USER_ACCESS_ADMINISTRATOR: frozenset({ASSIGN_ROLES}),
    BuiltinRole.VM_CONTRIBUTOR: frozenset({RUN_COMMAND}),
    BuiltinRole.MANAGED_IDENTITY_OPERATOR: frozenset({TAKE_IDENTITY}),
    BuiltinRole.KEY_VAULT_ADMINISTRATOR: frozenset({READ_SECRETS}),
    BuiltinRole.KEY_VAULT_SECRETS_USER: frozenset({READ_SECRETS}),
}


def beyond_its_own(role: BuiltinRole | None, scope: str | None, own_secrets: set[str]) -> set[str]:
    """What a grant of `role` at `scope` (a resource path below `providers/`, or None for its whole resource group)
    lets an identity do beyond its job: every capability of CAPABILITIES but reading secrets, when the grant is on one
    secret of `own_secrets` (Key Vault RBAC scopes a role to a single secret: learn.microsoft.com/azure/key-vault/
    general/rbac-guide)."""
    can = set(CAPABILITIES.get(role, frozenset())) if role is not None else set()
    secret = scope.rpartition("/secrets/")[2] if scope and "/secrets/" in scope else None
    if READ_SECRETS in can and secret is not None and secret in own_secrets:
        can.discard(READ_SECRETS)
    return can


class NoReachBeyondTheJob(Rule[ConfigContext]):
    """Least privilege as reach: what a non-admin can get to, directly or through the managed identities of the VMs it
    signs in to (any process on a VM gets its identities' tokens from the instance metadata service:
    learn.microsoft.com/entra/identity/managed-identities-azure-resources/how-to-use-vm-token).

    - A non-admin principal the config names (users and readers groups, extra role assignments) must not take hpclz's
      identities or read the vault's secrets: both live in the management group, so Contributor, Managed Identity
      Operator or a Key Vault secret-reading role there reaches CycleCloud's identity and the Slurm database password.
      (VM sign-in and run command on the compute group: HPCLZ-IDN-011; Owner and User Access Administrator: IDN-003.)
    - The identities on VMs users sign in to hold no run command, role assignment or identity attach anywhere, and read
      only their own secrets, each granted on that one secret: the compute identity (every partition node, where jobs
      run) the config's secrets but the Slurm database password and the portal's client secret; the locker identity
      (every node, login nodes included) none; the portal VM's identity (Open OnDemand users run there) its client
      secret. The analysis follows every role assignment hpclz renders (hpclz.render.roles)."""

    id = "HPCLZ-IDN-012"
    severity = Severity.ERROR
    title = "A non-admin principal, or an identity on a VM users sign in to, reaches beyond its job"
    fix = (
        "Grant only identity.groups.admins roles that manage identities, VMs or the vault; give others data roles on "
        "the one container or secret they need."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        # Imported here: `hpclz validate` loads the render model only when this rule runs.
        from hpclz.config.identity import Area
        from hpclz.render import prometheus
        from hpclz.render.roles import (
            ROLE_IDS,
            accounting_secret,
            assignments,
            portal_secret,
            portal_vault_reader,
            prometheus_assignments,
        )
        from hpclz.render.zone import LOCKER_IDENTITY, Zone

        zone = Zone(ctx.config)
        identity = ctx.config.identity
        admins = {g.lower() for g in identity.groups.admins}
        names = {role_id: role for role, role_id in ROLE_IDS.items()}
        rendered = [(area.value, a) for area in Area for a in assignments(zone, area.value)]
        rendered += [("monitoring", a) for a in prometheus_assignments(zone, prometheus.ids(zone))]

        def role_of(definition: str) -> BuiltinRole | None:
            return next((r for rid, r in names.items() if rid in definition), None)

        for area, a in rendered:
            role = role_of(a.role_definition_id)
            if a.principal_id.startswith("[") or a.principal_id.lower() in admins or role is None:
                continue
            reach = CAPABILITIES.get(role, frozenset()) & {TAKE_IDENTITY, READ_SECRETS}
            if area == Area.MANAGEMENT.value and reach:
                yield self.finding(
                    ctx,
                    _path(a.path),
                    f"{a.principal_id} holds {role.value} on the management group: it can "
                    f"{' and '.join(sorted(reach))} there (hpclz's managed identities, every secret in the vault)",
                )

        vault = identity.key_vault
        jobs = set(vault.secrets) if isinstance(vault, NewKeyVault) else set()
        allowed: dict[str, set[str]] = {
            "compute": jobs - {n for n in (accounting_secret(zone), portal_secret(zone)) if n},
            LOCKER_IDENTITY: set(),
        }
        on_user_vms = {zone.identity_principal(who): who for who in allowed}
        grants = [(on_user_vms[a.principal_id], role_of(a.role_definition_id), a.scope, a.path)
                  for _area, a in rendered if a.principal_id in on_user_vms]  # fmt: skip
        reader = portal_vault_reader(zone, "portal")  # the VM's name enters only the assignment's name
        if reader is not None:
            grants.append(("portal", BuiltinRole.KEY_VAULT_SECRETS_USER, reader["scope"], "portal.oidc"))
            allowed["portal"] = {str(portal_secret(zone))}
        for who, role, scope, path in grants:
            can = beyond_its_own(role, scope, allowed[who])
            if can and role is not None:
                yield self.finding(
                    ctx,
                    _path(path),
                    f"the {who} identity (on VMs users sign in to) holds {role.value} at "
                    f"{scope or 'its resource group'}: its users can {' and '.join(sorted(can))}",
                )


def _path(dotted: str) -> tuple[str | int, ...]:
    """`identity.extra_role_assignments[2]` -> ("identity", "extra_role_assignments", 2)."""
    out: list[str | int] = []
    for part in dotted.split("."):
        name, _, index = part.partition("[")
        out.append(name)
        if index:
            out.append(int(index.rstrip("]")))
    return tuple(out)


class UsersReachCycleCloudUi(Rule[ConfigContext]):
    """A user gets a CycleCloud record, its UID and a node account only by signing in to CycleCloud's web UI first
    (learn.microsoft.com/azure/cyclecloud/how-to/user-authentication; docs/entra-login.md), and adds the SSH key the
    login nodes accept there (learn.microsoft.com/azure/cyclecloud/how-to/user-access). Azure Bastion's tunnel does
    not carry the UI: "Connect to a VM using SSH or RDP. (The bastion tunnel doesn't relay web servers or hosts.)"
    (MicrosoftDocs/azure-docs@b8db86a:includes/bastion-native-connect-tunnel.md l.11); a tunnel to 443 would serve a
    browser one TCP connection at a time (Azure/azure-cli-extensions@144a628 src/bastion/azext_bastion/tunnel.py
    l.116-148, `TunnelServer._listen` joins both relay threads before its next accept); and the SSH forward through it
    needs a sign-in on the CycleCloud server, which only the admins have (HPCLZ-IDN-011). So the users reach the UI
    only over a route into the VNet: hub peering (the one hpclz models) or a VPN of your own."""

    id = "HPCLZ-IDN-013"
    severity = Severity.WARNING
    title = "Users have no supported way to CycleCloud's web UI"
    fix = (
        "Peer the zone with a hub the users reach (network.hub_peering), or route their VPN into the VNet; they open "
        "https://<CycleCloud private IP>/home, and `hpclz deploy` prints its redirect URIs."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        identity = ctx.config.identity
        if identity.cyclecloud_entra is None or not identity.groups.users or ctx.config.network.hub_peering:
            return
        yield self.finding(
            ctx,
            ("identity", "groups", "users"),
            f"identity.groups.users names {len(identity.groups.users)} group(s), but the zone has no hub peering: "
            "through Bastion only the admins reach CycleCloud's UI, so users cannot make the first sign-in that "
            "gives them a node account",
        )


IDENTITY_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    NoPlaceholderPrincipal,
    PrincipalInOneRole,
    NoPrivilegedExtraRoles,
    SshKeyAccepted,
    ProdKeyVaultPurgeProtection,
    CheckpointIdentity,
    SecretNamesDistinct,
    GroupsNeedEntraLogin,
    GroupsNeedCycleCloudEntra,
    VaultSecretIsAReference,
    NoUserReachesCycleCloudIdentity,
    NoReachBeyondTheJob,
    UsersReachCycleCloudUi,
)
