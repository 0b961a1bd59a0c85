"""Lint rule for user delegation keys: an identity whose blob data roles sit on containers gets no key without a role
at the account.

A user delegation SAS is signed with a key from Get User Delegation Key, which needs
`Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action`, and "because the Get User Delegation
Key operation acts at the level of the storage account, the Microsoft.Storage/storageAccounts/blobServices/
generateUserDelegationKey action must be scoped at the level of the storage account, the resource group, or the
subscription" (learn.microsoft.com/rest/api/storageservices/create-user-delegation-sas, "Assign permissions with
RBAC"): a blob data role scoped to a container, which holds that action too, gives no key.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hpclz.arm.walk import ResourceAt
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext
from hpclz.rules.template.locker import BLOB_ROLES, ROLE_ASSIGNMENT, STORAGE, _identity, _props, _role

# Built-in roles whose actions include generateUserDelegationKey/action, by role definition ID, as the Azure RBAC
# built-in roles reference prints their JSON (MicrosoftDocs/azure-docs@1b4e136a1da731e1ed16444eb6ce5701bcd8c0f4:
# articles/role-based-access-control/built-in-roles/storage.md for the Storage ones, the action itself or
# Microsoft.Storage/storageAccounts/*; MicrosoftDocs/azure-docs@0b8729eaf7eb0aabc6390cb17348d19761285f12:
# articles/role-based-access-control/built-in-roles/privileged.md for Owner and Contributor, "*"). Only roles hpclz
# renders or can be asked to (hpclz.config.identity.BuiltinRole) are listed, each checked against that JSON; any other
# role counts as giving no key, so the rule may report one too many, never miss one.
KEY_ROLES = {
    "db58b8e5-c6ad-4a2a-8342-4190687cbf4a": "Storage Blob Delegator",
    "ba92f5b4-2d11-453d-a403-e96b0029c9fe": "Storage Blob Data Contributor",
    "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1": "Storage Blob Data Reader",
    "17d1049b-9a84-46fb-8f53-869881c3d3ab": "Storage Account Contributor",
    "b24988ac-6180-42a0-ab88-20f7382dd24c": "Contributor",
    "8e3af657-a8ff-443c-a75c-2fe8c4bcb635": "Owner",
}


def _container_account(scope: str) -> str | None:
    """The account of a container scope (`Microsoft.Storage/storageAccounts/<a>/blobServices/default/containers/<c>`)."""
    parts = scope.strip("/").split("/")
    if len(parts) == 7 and parts[1].lower() == "storageaccounts" and parts[5].lower() == "containers":
        return parts[2].lower()
    return None


def _key_accounts(template: dict[str, Any]) -> dict[str, set[str]]:
    """identity name -> the accounts (lower-case names) at which it holds a role with the key action in this template:
    scoped to the account itself, or to the template's resource group (no scope) where the template declares the
    account."""
    ctx = TemplateContext(template, "")
    declared = {str(f.resource.get("name", "")).lower() for f in ctx.resources if f.type.lower() == STORAGE}
    out: dict[str, set[str]] = {}
    for found in ctx.resources:
        if found.type.lower() != ROLE_ASSIGNMENT or _role(found.resource, KEY_ROLES) is None:
            continue
        name = _identity(str(_props(found.resource).get("principalId", "")))
        scope = str(found.resource.get("scope") or "").strip("/").split("/")
        if name is None:
            continue
        if len(scope) == 3 and scope[1].lower() == "storageaccounts":
            out.setdefault(name, set()).add(scope[2].lower())
        elif scope == [""]:
            out.setdefault(name, set()).update(declared)
    return out


class ContainerDataIdentityGetsDelegationKey(Rule[TemplateContext]):
    """A managed identity that holds a blob data role on a container also holds a role with
    `generateUserDelegationKey/action` on that container's account (or its resource group), in this template or
    another of the plan: jobs sign their per-container user delegation SAS with a key only the account scope gives
    ("the ... generateUserDelegationKey action must be scoped at the level of the storage account, the resource group,
    or the subscription", learn.microsoft.com/rest/api/storageservices/create-user-delegation-sas, "Assign permissions
    with RBAC"), so without it Get User Delegation Key answers 403 and no job gets a SAS. Storage Blob Delegator holds
    that action alone (MicrosoftDocs/azure-docs@1b4e136:articles/role-based-access-control/built-in-roles/storage.md)."""

    id = "HPCLZ-TPL-061"
    severity = Severity.ERROR
    title = "An identity with blob data roles on containers gets no user delegation key"
    fix = (
        "Grant the identity Storage Blob Delegator on the storage account (hpclz.render.roles grants the compute one)."
    )

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        held: dict[str, set[str]] = {}
        for template in (ctx.template, *ctx.plan_templates.values()):
            for name, accounts in _key_accounts(template).items():
                held.setdefault(name, set()).update(accounts)
        for found in ctx.resources:
            yield from self._container_grant(ctx, found, held)

    def _container_grant(self, ctx: TemplateContext, found: ResourceAt, held: dict[str, set[str]]) -> Iterable[Finding]:
        role = _role(found.resource, BLOB_ROLES) if found.type.lower() == ROLE_ASSIGNMENT else None
        account = _container_account(str(found.resource.get("scope") or ""))
        name = _identity(str(_props(found.resource).get("principalId", "")))
        if role is None or account is None or name is None or account in held.get(name, set()):
            return
        yield self.finding(
            ctx,
            found.path,
            f"{found.label}: {name} holds {role} on a container of {account}, but no role with "
            "generateUserDelegationKey/action at that account: it gets no user delegation key",
        )
