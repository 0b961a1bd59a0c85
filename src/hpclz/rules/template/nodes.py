"""Lint rules for what CycleCloud creates from the cluster in the CycleCloud server's userData.

CycleCloud creates every node after deploy, outside ARM deployments, so what ARM's own checks see of the nodes is
only what the rendered cluster declares: their tags and the identities attached to them. Both are judged here
against the rest of the plan: the zone's own policy assignments, and the role assignments of those identities.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext
from hpclz.rules.template.locker import (
    DATA_ROLES,
    ROLE_ASSIGNMENT,
    VM,
    _identity,
    _props,
    _role,
    decoded_user_data,
)

POLICY_ASSIGNMENT = "microsoft.authorization/policyassignments"
# Built-in "Require a tag on resources" (Azure/azure-policy built-in-policies/policyDefinitions/Tags/
# RequireTag_Deny.json): deny, mode Indexed, so every VM, scale set, NIC and disk in its scope needs the tag.
REQUIRE_TAG = "871b6d14-10aa-478d-b590-94f262ecfa99"
# Key Vault data roles that read secret values (learn.microsoft.com/azure/role-based-access-control/built-in-roles).
SECRET_READERS = {
    "4633458b-17de-408a-b874-0445c86b69e6": "Key Vault Secrets User",
    "b86a8fe4-44ce-4948-aee5-eccb2c155cd7": "Key Vault Secrets Officer",
    "00482a5a-887f-4fb3-b363-3b7fe8e74483": "Key Vault Administrator",
}
_HEADER = re.compile(r"^\s*(\[\[(?:node|nodearray)\s+[^\[\]]+\]\])\s*$", re.M)
_SUBSECTION = re.compile(r"^\s*\[\[\[([^\[\]]+)\]\]\]\s*$", re.M)
# CycleCloud's iptables rule that keeps every user but root and its own from the instance metadata service, on
# unless a node's configuration turns it off ("node.prevent_metadata_access ... Default: true",
# learn.microsoft.com/azure/cyclecloud/cluster-references/configuration-reference, [[[configuration cyclecloud]]]).
METADATA_ACCESS = "cyclecloud.node.prevent_metadata_access"


def cluster_nodes(document: dict[str, Any]) -> dict[str, dict[str, str]]:
    """`[[node x]]` / `[[nodearray x]]` -> its own settings over `[[node defaults]]`'s, `$Parameter`s resolved;
    only the settings before the first `[[[sub-section]]]`, and multi-line `'''` values left out."""
    text = str(document.get("template", ""))
    parameters = json.loads(str(document.get("parameters") or "{}"))
    parts = _HEADER.split(text)
    sections = {parts[i].strip(): _settings(parts[i + 1], parameters) for i in range(1, len(parts) - 1, 2)}
    defaults = sections.pop("[[node defaults]]", {})
    return {header: {**defaults, **own} for header, own in sections.items()}


def _settings(body: str, parameters: dict[str, Any]) -> dict[str, str]:
    head = re.sub(r"'''.*?'''", "''", body.split("[[[", 1)[0], flags=re.S)
    out = {}
    for match in re.finditer(r"^\s*([A-Za-z][\w.-]*)\s*=\s*(.*?)\s*$", head, flags=re.M):
        value = match.group(2)
        if value.startswith("$"):
            value = str(parameters.get(value[1:], value))
        out[match.group(1)] = value.strip('"')
    return out


def _listed_resources(template: dict[str, Any]) -> list[Any]:
    """The template's top-level resources, or none where `resources` is not a list (a rule never crashes on a
    malformed template: the schema gate reports that)."""
    listed = template.get("resources")
    return listed if isinstance(listed, list) else []


def _required_tags(template: dict[str, Any]) -> list[str]:
    out = []
    for resource in _listed_resources(template):
        if not isinstance(resource, dict) or str(resource.get("type", "")).lower() != POLICY_ASSIGNMENT:
            continue
        props = _props(resource)
        if str(props.get("policyDefinitionId", "")).lower().endswith(REQUIRE_TAG):
            tag = (props.get("parameters") or {}).get("tagName", {})
            value = tag.get("value") if isinstance(tag, dict) else tag
            if isinstance(value, str):
                out.append(value)
    return out


class NodesCarryRequiredTags(Rule[TemplateContext]):
    """Every node CycleCloud creates carries each tag the zone's own "Require a tag on resources" assignments demand
    in the group CycleCloud creates it in. That policy denies the write of every VM, scale set, NIC and disk
    without the tag, so a node without it is never created."""

    id = "HPCLZ-TPL-052"
    severity = Severity.ERROR
    title = "CycleCloud's nodes lack a tag the zone's own policy requires"
    fix = "Give every node the zone's tags (Tags.<name> in [[node defaults]] of the cluster template)."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        required = _required_tags(ctx.template)
        if not required:
            return
        for found in ctx.resources:
            document = decoded_user_data(found.resource) if found.type.lower() == VM else None
            for header, settings in cluster_nodes(document).items() if document else ():
                carried = {k[len("Tags.") :].lower() for k in settings if k.startswith("Tags.")}
                missing = [tag for tag in required if tag.lower() not in carried]
                if missing:
                    yield self.finding(
                        ctx,
                        found.path,
                        f"{found.label}: {header} lacks the tag(s) {', '.join(missing)} the zone requires",
                    )


class NodeIdentitiesReadSingleSecrets(Rule[TemplateContext]):
    """No identity attached to CycleCloud's nodes may read secrets on a whole Key Vault: any process on a node can
    take a token of every identity attached to it (learn.microsoft.com/entra/identity/managed-identities-azure-
    resources/how-to-use-vm-token), so every job could read every secret, the Slurm database password among them.
    Grant Key Vault Secrets User on each secret the nodes need (a role can be assigned at the scope of one secret:
    learn.microsoft.com/azure/key-vault/general/rbac-guide), or keep the nodes' secrets in a vault of their own."""

    id = "HPCLZ-TPL-053"
    severity = Severity.ERROR
    title = "A node identity reads every secret of a Key Vault"
    fix = "Assign Key Vault Secrets User on single secrets (scope .../vaults/<vault>/secrets/<name>), not the vault."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        wide = _vault_wide_readers(ctx)
        for found in ctx.resources:
            document = decoded_user_data(found.resource) if found.type.lower() == VM else None
            attached = {
                name
                for settings in (cluster_nodes(document).values() if document else ())
                for item in settings.get("Azure.Identities", "").split(",")
                if (name := _identity(item.strip()))
            }
            for name in sorted(attached & set(wide)):
                yield self.finding(ctx, found.path, f"{found.label}: the nodes carry {name}, which holds {wide[name]}")


def _vault_wide_readers(ctx: TemplateContext) -> dict[str, str]:
    """identity name -> '<role> on the whole vault <name>', from this template's and the plan's role assignments."""
    out: dict[str, str] = {}
    for template in (ctx.template, *ctx.plan_templates.values()):
        for resource in _listed_resources(template):
            if not isinstance(resource, dict) or str(resource.get("type", "")).lower() != ROLE_ASSIGNMENT:
                continue
            role = _role(resource, SECRET_READERS)
            scope = str(resource.get("scope", "")).split("/")
            if role is None or len(scope) != 3 or [p.lower() for p in scope[:2]] != ["microsoft.keyvault", "vaults"]:
                continue
            name = _identity(str(_props(resource).get("principalId", "")))
            if name:
                out.setdefault(name, f"{role} on the whole vault {scope[2]}")
    return out


class SecretParametersReachTheSchedulerAlone(Rule[TemplateContext]):
    """A secret cluster parameter (one hpclz-cluster-sync reads from Key Vault at import, `secret_parameters` in the
    CycleCloud server's userData) is set in the scheduler's own configuration, never in `[[node defaults]]` or a
    nodearray: every node gets the settings of its sections, and root on a login or compute node reads them. The only
    such secret is the Slurm accounting password, the MySQL server's admin login, and cyclecloud-slurm reads it on
    the scheduler alone (Azure/cyclecloud-slurm@50e6739:azure-slurm-install/install.py l.358-363: accounting()
    returns on any other role)."""

    id = "HPCLZ-TPL-056"
    severity = Severity.ERROR
    title = "A secret cluster parameter reaches nodes other than the scheduler"
    fix = "Set the secret parameter only in [[node scheduler]]'s [[[configuration]]] of the cluster template."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in ctx.resources:
            document = decoded_user_data(found.resource) if found.type.lower() == VM else None
            if not document:
                continue
            secrets = _secret_parameters(document)
            for header, body in _sections(str(document.get("template", ""))):
                if header == "[[node scheduler]]":
                    continue
                for name in sorted(secrets):
                    if re.search(rf"^\s*[\w.-]+\s*=\s*\${re.escape(name)}\s*$", body, flags=re.M):
                        yield self.finding(ctx, found.path, f"{found.label}: {header} sets the secret ${name}")


def _secret_parameters(document: dict[str, Any]) -> set[str]:
    try:
        secrets = json.loads(str(document.get("secret_parameters") or "{}"))
    except ValueError:
        return set()
    return {str(name) for name in secrets} if isinstance(secrets, dict) else set()


def _sections(cluster: str) -> list[tuple[str, str]]:
    """`[[node x]]` / `[[nodearray x]]` -> its whole text, sub-sections included, multi-line `'''` values removed."""
    parts = _HEADER.split(re.sub(r"'''.*?'''", "''", cluster, flags=re.S))
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def cluster_configuration(document: dict[str, Any]) -> dict[str, dict[str, str]]:
    """`[[node x]]` / `[[nodearray x]]` -> its configuration over `[[node defaults]]`'s: the settings of every
    `[[[configuration]]]` sub-section, those of a `[[[configuration NAME]]]` under `NAME.` ("Internally, CycleCloud
    merges the configuration sections", learn.microsoft.com/azure/cyclecloud/cluster-references/
    configuration-reference), `$Parameter`s resolved."""
    parameters = json.loads(str(document.get("parameters") or "{}"))
    sections = {header: _configuration(body, parameters) for header, body in _sections(str(document.get("template")))}
    defaults = sections.pop("[[node defaults]]", {})
    return {header: {**defaults, **own} for header, own in sections.items()}


def _configuration(body: str, parameters: dict[str, Any]) -> dict[str, str]:
    parts = _SUBSECTION.split(body)
    out: dict[str, str] = {}
    for index in range(1, len(parts) - 1, 2):
        kind, _, name = parts[index].strip().partition(" ")
        if kind == "configuration":
            prefix = f"{name.strip()}." if name.strip() else ""
            out.update({prefix + key: value for key, value in _settings(parts[index + 1], parameters).items()})
    return out


class JobsKeptFromNodeIdentities(Rule[TemplateContext]):
    """A node that opens the instance metadata service to every user hands every job every role its identities hold.

    CycleCloud's iptables rule keeps every user but root and its own from that service unless the node's configuration
    sets cyclecloud.node.prevent_metadata_access = false ("Prevents users, other than the root user or cyclecloud
    user, from accessing the VM metadata from the node. CycleCloud applies these access rules in iptables. Default:
    true", learn.microsoft.com/azure/cyclecloud/cluster-references/configuration-reference). Opened, any process of
    any job takes a token for any identity the node carries (a token is asked for by `client_id` or `msi_res_id`,
    learn.microsoft.com/entra/identity/managed-identities-azure-resources/how-to-use-vm-token), so every role those
    identities hold (the locker's reads, Key Vault secrets, metrics publishing, blob data) is every user's, and the
    same endpoint lets a job approve Scheduled Events of its placement group (learn.microsoft.com/azure/
    virtual-machines/linux/scheduled-events, "Scope"). Jobs get their blob containers instead through the per-job user
    delegation SAS that hpclz's Slurm prolog mints as root (docs/checkpoints.md). Earlier this ID demanded the opposite
    (execute arrays opened for the compute identity's blob roles); it now refuses exactly that."""

    id = "HPCLZ-TPL-060"
    severity = Severity.ERROR
    title = "A node opens the metadata service to jobs while its identities hold roles"
    fix = (
        f"Keep {METADATA_ACCESS} = true (CycleCloud's default) on every node; jobs reach their blob containers "
        "through the per-job SAS in /run/hpclz/jobs/$SLURM_JOB_ID (docs/checkpoints.md)."
    )

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        held = _roles_held(ctx)
        for found in ctx.resources:
            document = decoded_user_data(found.resource) if found.type.lower() == VM else None
            if not document:
                continue
            attributes = cluster_nodes(document)
            for header, settings in cluster_configuration(document).items():
                if settings.get(METADATA_ACCESS, "true").strip().lower() != "false":
                    continue
                for item in attributes.get(header, {}).get("Azure.Identities", "").split(","):
                    name = _identity(item.strip())
                    if name in held:
                        yield self.finding(
                            ctx,
                            found.path,
                            f"{found.label}: {header} opens the instance metadata service to every job, yet carries "
                            f"{name}, which holds {held[name]}",
                        )


def _roles_held(ctx: TemplateContext) -> dict[str, str]:
    """identity name -> one role it holds (its name where known, else its role definition's GUID), from every role
    assignment of this template and the plan's others, the locker's reads included."""
    known = {**DATA_ROLES, **SECRET_READERS}
    held: dict[str, str] = {}
    for template in (ctx.template, *ctx.plan_templates.values()):
        for found in TemplateContext(template, "").resources:
            if found.type.lower() != ROLE_ASSIGNMENT:
                continue
            name = _identity(str(_props(found.resource).get("principalId", "")))
            definition = str(_props(found.resource).get("roleDefinitionId", ""))
            guids = re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", definition.lower())
            if name and guids:
                held.setdefault(name, _role(found.resource, known) or f"role {guids[-1]}")
    return dict(sorted(held.items()))
