"""Lint rules for CycleCloud's locker and the identities on login nodes.

The locker holds the cluster-init that every new node runs as root: whoever can write it owns the cluster. CCWS
keeps it in an account of its own that only the CycleCloud server writes and the nodes' locker identity reads
(Azure/cyclecloud-slurm-workspace@bc0fc1b: bicep/storage.bicep, bicep/miRoleAssignments.bicep). A login node is
where any user gets a shell, and any local process can ask the instance metadata service for a token of every
identity attached to the VM (learn.microsoft.com/entra/identity/managed-identities-azure-resources/
how-to-use-vm-token): an identity with data roles there hands those roles to every user.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from hpclz.arm.walk import ResourceAt
from hpclz.findings import Finding, Severity
from hpclz.render.payload import unpack
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext

STORAGE = "microsoft.storage/storageaccounts"
CONTAINER = "microsoft.storage/storageaccounts/blobservices/containers"
ROLE_ASSIGNMENT = "microsoft.authorization/roleassignments"
VM = "microsoft.compute/virtualmachines"
# CycleCloud's locker container (CCWS's cyclecloud_install.py) and the hpclz wheel's container beside it, whose
# blob each node checks against the SHA-256 it was given before using it.
LOCKER_CONTAINER = "cyclecloud"
WHEEL_CONTAINER = "hpclz"
LOCKER_CONTAINERS = frozenset({LOCKER_CONTAINER, WHEEL_CONTAINER})
# Built-in data-plane roles (learn.microsoft.com/azure/role-based-access-control/built-in-roles): what a token of
# the identity could read or write besides the control plane.
WRITE_ROLES = {
    "ba92f5b4-2d11-453d-a403-e96b0029c9fe": "Storage Blob Data Contributor",
    "b7e6dc6d-f1e8-4753-8033-0f276bb0955b": "Storage Blob Data Owner",
}
BLOB_ROLES = {**WRITE_ROLES, "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1": "Storage Blob Data Reader"}
DATA_ROLES = {
    **BLOB_ROLES,
    "4633458b-17de-408a-b874-0445c86b69e6": "Key Vault Secrets User",
    "b86a8fe4-44ce-4948-aee5-eccb2c155cd7": "Key Vault Secrets Officer",
    "00482a5a-887f-4fb3-b363-3b7fe8e74483": "Key Vault Administrator",
}
IDENTITY_NAME = re.compile(r"userAssignedIdentities'\s*,\s*'([^']+)'|userAssignedIdentities/([^/'\"\]\s,]+)")


def _props(resource: dict[str, Any]) -> dict[str, Any]:
    properties = resource.get("properties")
    return properties if isinstance(properties, dict) else {}


def _role(resource: dict[str, Any], roles: dict[str, str]) -> str | None:
    definition = str(_props(resource).get("roleDefinitionId", ""))
    return next((name for role_id, name in roles.items() if role_id in definition), None)


def _identity(text: str) -> str | None:
    match = IDENTITY_NAME.search(text)
    return (match.group(1) or match.group(2)) if match else None


def _containers_by_account(ctx: TemplateContext) -> dict[str, set[str]]:
    """account name -> the container names the template declares in it."""
    out: dict[str, set[str]] = {}
    for found in ctx.resources:
        if found.type.lower() == CONTAINER:
            parts = str(found.resource.get("name", "")).split("/")
            account = parts[0] if len(parts) == 3 else _account_of_nested(found)
            if account:
                out.setdefault(account, set()).add(parts[-1])
    return out


def _account_of_nested(found: ResourceAt) -> str | None:
    """A container declared as a child of blobServices: its account is the first part of the parent's name."""
    for depends in found.resource.get("dependsOn") or []:
        match = re.search(r"blobServices'\s*,\s*'([^']+)'", str(depends))
        if match:
            return match.group(1)
    return None


class LockerAccountHoldsNoData(Rule[TemplateContext]):
    """CycleCloud's locker must not share an account with data, and no user or group may write it: the
    cluster-init in it runs as root on every new node. Writes on the hpclz wheel container are allowed, as each
    node checks that blob against the SHA-256 it was given."""

    id = "HPCLZ-TPL-050"
    severity = Severity.ERROR
    title = "CycleCloud locker shares its account with data, or users can write it"
    fix = "Keep the locker (container 'cyclecloud') in an account of its own that only CycleCloud's identity writes."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        accounts = _containers_by_account(ctx)
        lockers = {name for name, containers in accounts.items() if LOCKER_CONTAINER in containers}
        for found in ctx.resources:
            name = str(found.resource.get("name", ""))
            if found.type.lower() == STORAGE and name in lockers:
                data = sorted(accounts[name] - LOCKER_CONTAINERS)
                if data:
                    yield self.finding(
                        ctx, found.path, f"{found.label}: the locker shares this account with data ({', '.join(data)})"
                    )
            elif found.type.lower() == ROLE_ASSIGNMENT:
                yield from self._user_writes(ctx, found, lockers)

    def _user_writes(self, ctx: TemplateContext, found: ResourceAt, lockers: set[str]) -> Iterator[Finding]:
        role = _role(found.resource, WRITE_ROLES)
        scope = str(found.resource.get("scope", ""))
        if role is None or _props(found.resource).get("principalType") not in ("User", "Group"):
            return
        parts = scope.split("/")
        account = parts[2] if len(parts) > 2 and parts[1].lower() == "storageaccounts" else None
        # The whole account, or the locker container itself: data containers beside it are the other finding's.
        if account in lockers and (len(parts) == 3 or parts[-1] == LOCKER_CONTAINER):
            principal = _props(found.resource).get("principalId")
            yield self.finding(
                ctx, found.path, f"{found.label}: {role} for {principal} on the locker account {account}"
            )


def decoded_user_data(resource: dict[str, Any]) -> dict[str, Any] | None:
    """The hpclz cluster document in a VM's userData (gzip and base64, hpclz.render.payload), or None."""
    unpacked = unpack(_props(resource).get("userData"))
    if unpacked is None:
        return None
    try:
        document = json.loads(unpacked.data.decode())
    except ValueError:  # not JSON, or not UTF-8 (UnicodeDecodeError is a ValueError)
        return None
    return document if isinstance(document, dict) and document.get("kind") == "hpclz-cyclecloud-cluster" else None


def _section(cluster: str, header: str) -> str | None:
    parts = re.split(r"^\s*(\[\[[^\[\]]+\]\])\s*$", cluster, flags=re.M)
    for index in range(1, len(parts) - 1, 2):
        if parts[index] == header:
            return parts[index + 1]
    return None


def login_identities(document: dict[str, Any]) -> list[str] | None:
    """The identity names CycleCloud attaches to the login nodes: the login nodearray's Azure.Identities, else the
    node defaults' (parameters resolved). None where the cluster has no login nodearray."""
    cluster = str(document.get("template", ""))
    login = _section(cluster, "[[nodearray login]]")
    if login is None:
        return None
    parameters = json.loads(str(document.get("parameters") or "{}"))
    for section in (login, _section(cluster, "[[node defaults]]") or ""):
        match = re.search(r"^\s*Azure\.Identities\s*=\s*(.*?)\s*$", section.split("[[[", 1)[0], flags=re.M)
        if match:
            value = match.group(1)
            value = str(parameters.get(value[1:], "")) if value.startswith("$") else value
            return [name for item in value.split(",") if (name := _identity(item.strip()))]
    return []


class LoginNodesCarryNoDataIdentity(Rule[TemplateContext]):
    """Login nodes carry no identity that holds a data role (blob data, Key Vault secrets) in any template of the
    plan: any user there can get its token from the instance metadata service."""

    id = "HPCLZ-TPL-051"
    severity = Severity.ERROR
    title = "An identity with data roles is attached to the login nodes"
    fix = "Give the login nodearray only the locker identity (Azure.Identities), never the compute identity."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        held = _data_roles(ctx)
        for found in ctx.resources:
            document = decoded_user_data(found.resource) if found.type.lower() == VM else None
            for name in (login_identities(document) or []) if document else []:
                if name in held:
                    yield self.finding(
                        ctx, found.path, f"{found.label}: the login nodes carry {name}, which holds {held[name]}"
                    )


def _data_roles(ctx: TemplateContext, roles: dict[str, str] = DATA_ROLES) -> dict[str, str]:
    """identity name -> a data role of `roles` it holds, from the role assignments of this template and the plan's
    others. Reads on the locker account are what the locker identity is for, and are left out."""
    held: dict[str, str] = {}
    for template in (ctx.template, *ctx.plan_templates.values()):
        lockers = {a for a, c in _containers_by_account(TemplateContext(template, "")).items() if LOCKER_CONTAINER in c}
        for found in TemplateContext(template, "").resources:
            role = _role(found.resource, roles) if found.type.lower() == ROLE_ASSIGNMENT else None
            scope = str(found.resource.get("scope", "")).split("/")
            if role is None or (len(scope) > 2 and scope[2] in lockers):
                continue
            name = _identity(str(_props(found.resource).get("principalId", "")))
            if name:
                held.setdefault(name, role)
    return held
