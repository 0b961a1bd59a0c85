"""Lint rules for Azure's own limits that the ARM schemas do not express: a template can match every schema and
still fail on deployment, or deploy and not do what hpclz promises. Each docstring names its source; the full
list is docs/azure-rules.md."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.template.context import TemplateContext

AMLFS = "microsoft.storagecache/amlfilesystems"
BASTION = "microsoft.network/bastionhosts"
STORAGE = "microsoft.storage/storageaccounts"
POLICIES = "microsoft.storage/storageaccounts/managementpolicies"
ROLE_ASSIGNMENT = "microsoft.authorization/roleassignments"
VM = "microsoft.compute/virtualmachines"
# Built-in role definition IDs, the same in every tenant (learn.microsoft.com/azure/role-based-access-control/
# built-in-roles): the two Managed Lustre's resource provider needs on an HSM account.
HSM_ROLES = {
    "17d1049b-9a84-46fb-8f53-869881c3d3ab": "Storage Account Contributor",
    "ba92f5b4-2d11-453d-a403-e96b0029c9fe": "Storage Blob Data Contributor",
}
# Access tiers: Archive exists on LRS, GRS and RA-GRS only
# (MicrosoftDocs/azure-docs@0089f18:articles/storage/blobs/access-tiers-overview.md).
ARCHIVE_SKUS = {"standard_lrs", "standard_grs", "standard_ragrs"}


def _props(resource: dict[str, Any]) -> dict[str, Any]:
    properties = resource.get("properties")
    return properties if isinstance(properties, dict) else {}


def _sku_name(resource: dict[str, Any]) -> str:
    """Lower-case sku.name, or "" where the template's sku is not an object (the rules never crash on it)."""
    sku = resource.get("sku")
    return str(sku.get("name", "")).lower() if isinstance(sku, dict) else ""


class AmlfsHsmPrerequisites(Rule[TemplateContext]):
    """Managed Lustre with HSM needs, before the file system is created: Storage Account Contributor and Storage
    Blob Data Contributor for the HPC Cache Resource Provider on the account, key access enabled on the account,
    and a logging container besides the data container. Creation fails otherwise, and ARM's validation does not
    catch it (MicrosoftDocs/azure-stack-docs@f1e86c5:azure-managed-lustre/amlfs-prerequisites.md)."""

    id = "HPCLZ-TPL-027"
    severity = Severity.ERROR
    title = "Managed Lustre HSM deployed without its storage prerequisites"
    fix = "Grant the HPC Cache Resource Provider both roles on the account, enable key access, and make the file "
    "system depend on the roles and both containers (storage.lustre.hsm.resource_provider_object_id)."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        granted = self._granted_roles(ctx)
        # By account name: the zone may hold other accounts (the shared-home NFS account) whose key access is off.
        key_access = {
            str(r.resource.get("name")): _props(r.resource).get("allowSharedKeyAccess")
            for r in ctx.resources
            if r.type.lower() == STORAGE
        }
        for found in ctx.resources:
            if found.type.lower() != AMLFS:
                continue
            hsm = _props(found.resource).get("hsm")
            settings = hsm.get("settings") if isinstance(hsm, dict) else None
            if not isinstance(settings, dict):
                continue
            yield from self._problems(ctx, found, settings, granted, key_access)

    def _problems(
        self, ctx: TemplateContext, found: Any, settings: dict[str, Any], granted: bool, key_access: dict[str, Any]
    ) -> Iterable[Finding]:
        where = (*found.path, "properties", "hsm")
        if not granted:
            roles = " and ".join(HSM_ROLES.values())
            yield self.finding(ctx, where, f"{found.label}: HSM without one principal holding {roles} on the account")
        container = str(settings.get("container") or "")
        hsm_accounts = [name for name in key_access if f"'{name}'" in container] or list(key_access)
        if any(key_access[name] is False for name in hsm_accounts):
            yield self.finding(ctx, where, f"{found.label}: HSM account has allowSharedKeyAccess false")
        depends = " ".join(str(d) for d in found.resource.get("dependsOn") or [])
        logging = str(settings.get("loggingContainer") or "")
        if not logging or _last_name(logging) not in depends:
            yield self.finding(ctx, where, f"{found.label}: does not depend on its HSM logging container")
        if granted and not any(role in depends for role in HSM_ROLES):
            yield self.finding(ctx, where, f"{found.label}: does not wait for the HSM role assignments")

    @staticmethod
    def _granted_roles(ctx: TemplateContext) -> bool:
        """Whether one principal holds both roles: the resource provider needs the pair, not one each."""
        held: dict[str, set[str]] = {}
        for r in ctx.resources:
            if r.type.lower() == ROLE_ASSIGNMENT:
                definition = str(_props(r.resource).get("roleDefinitionId", ""))
                principal = str(_props(r.resource).get("principalId", ""))
                held.setdefault(principal, set()).update(role for role in HSM_ROLES if role in definition)
        return any(roles == set(HSM_ROLES) for roles in held.values())


def _last_name(resource_id: str) -> str:
    """The last quoted name of a resourceId() expression: enough to find the same container in dependsOn."""
    parts = resource_id.split("'")
    return f"'{parts[-2]}'" if len(parts) >= 3 else resource_id


class BastionNativeClientTunneling(Rule[TemplateContext]):
    """`az network bastion ssh`, which hpclz prints as the way in, needs the Standard (or Premium) SKU with
    "Native Client Support", i.e. enableTunneling (MicrosoftDocs/azure-docs@02ee580:articles/bastion/native-client.md;
    CCWS sets it: Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/bastion.bicep)."""

    id = "HPCLZ-TPL-028"
    severity = Severity.ERROR
    title = "Bastion without native client tunneling"
    fix = "Use sku Standard or Premium with properties.enableTunneling: true."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        for found in ctx.resources:
            if found.type.lower() != BASTION:
                continue
            sku = found.resource.get("sku")
            name = sku.get("name") if isinstance(sku, dict) else None
            if name == "Basic" or _props(found.resource).get("enableTunneling") is not True:
                yield self.finding(
                    ctx,
                    (*found.path, "properties"),
                    f"{found.label}: sku {name!r}, enableTunneling {_props(found.resource).get('enableTunneling')!r}",
                )


class ArchiveTierAvailable(Rule[TemplateContext]):
    """A lifecycle rule that tiers to Archive fails on ZRS, GZRS and RA-GZRS accounts (Archive exists on LRS, GRS
    and RA-GRS only: MicrosoftDocs/azure-docs@0089f18:articles/storage/blobs/access-tiers-overview.md). Without a
    prefix filter it also archives the CycleCloud locker and the Lustre HSM container in the same account."""

    id = "HPCLZ-TPL-029"
    severity = Severity.ERROR
    title = "Lifecycle policy tiers to Archive where Archive is unavailable or unfiltered"
    fix = "Use a Standard_LRS/GRS/RAGRS account for archived data, and limit the rule with filters.prefixMatch."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        skus = {
            str(r.resource.get("name", "")).lower(): _sku_name(r.resource)
            for r in ctx.resources
            if r.type.lower() == STORAGE
        }
        for found in ctx.resources:
            if found.type.lower() != POLICIES:
                continue
            account = str(found.resource.get("name", "")).split("/")[0].lower()
            policy = _props(found.resource).get("policy")
            rules = policy.get("rules") if isinstance(policy, dict) else None
            for index, rule in enumerate(rules if isinstance(rules, list) else []):
                yield from self._rule_problems(ctx, found, index, rule, skus.get(account))

    def _rule_problems(
        self, ctx: TemplateContext, found: Any, index: int, rule: Any, sku: str | None
    ) -> Iterable[Finding]:
        definition = rule.get("definition") if isinstance(rule, dict) else None
        if not isinstance(definition, dict) or "tierToArchive" not in str(definition.get("actions")):
            return
        where = (*found.path, "properties", "policy", "rules", index)
        if sku is not None and sku not in ARCHIVE_SKUS:
            yield self.finding(ctx, where, f"{found.label}: tiers to Archive on a {sku} account")
        filters = definition.get("filters")
        if not isinstance(filters, dict) or not filters.get("prefixMatch"):
            yield self.finding(ctx, where, f"{found.label}: tiers to Archive with no prefixMatch filter")


VM = "microsoft.compute/virtualmachines"
EXTENSION = "microsoft.compute/virtualmachines/extensions"
# Virtual Machine Administrator Login and Virtual Machine User Login (built-in-roles).
VM_LOGIN_ROLES = ("1c0163c0-47e6-4577-8991-ea5c82e286e4", "fb879df8-f326-4884-b1cf-06f3ad86be52")


class VmLoginNeedsEntraExtension(Rule[TemplateContext]):
    """The VM login roles only let Entra ID users in through the AADSSHLoginForLinux extension, which needs the
    VM's system-assigned identity (learn.microsoft.com/entra/identity/devices/howto-vm-sign-in-azure-ad-linux)."""

    id = "HPCLZ-TPL-032"
    severity = Severity.ERROR
    title = "VM login roles granted without the Entra ID SSH extension"
    fix = "Add a Microsoft.Azure.ActiveDirectory/AADSSHLoginForLinux extension and a system-assigned identity."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        grants = any(
            r.type.lower() == ROLE_ASSIGNMENT
            and any(role in str(_props(r.resource).get("roleDefinitionId", "")) for role in VM_LOGIN_ROLES)
            for r in ctx.resources
        )
        if not grants:
            return
        extension = any(
            r.type.lower() == EXTENSION and _props(r.resource).get("type") == "AADSSHLoginForLinux"
            for r in ctx.resources
        )
        for found in ctx.resources:
            if found.type.lower() != VM:
                continue
            identity = found.resource.get("identity")
            kind = str(identity.get("type", "")) if isinstance(identity, dict) else ""
            if not extension or "SystemAssigned" not in kind:
                yield self.finding(
                    ctx,
                    found.path,
                    f"{found.label}: VM login roles granted, but AADSSHLoginForLinux "
                    f"{'is installed' if extension else 'is missing'} and the identity is {kind or 'none'!r}",
                )


MAINTENANCE = "microsoft.maintenance/maintenanceconfigurations"
ASSIGNMENT = "microsoft.maintenance/configurationassignments"


class PlatformPatchingOnSupportedImage(Rule[TemplateContext]):
    """`patchMode: AutomaticByPlatform` "is only supported for VMs that are created using the supported OS platform
    images", listed by exact publisher, offer and sku; "Custom images or any other publisher, offer, sku combinations
    aren't supported" (learn.microsoft.com/azure/virtual-machines/automatic-vm-guest-patching, MicrosoftDocs/
    azure-compute-docs@0ba239a; the list: hpclz/catalog/guest_patching.json). ARM refuses such a VM with
    InvalidParameter "The selected VM image is not supported for VM Guest patch operations" (the deployment
    error captured in hashicorp/packer-plugin-azure#453), or the VM is never patched. The CycleCloud server's
    azurecyclecloud image is not listed. An imageReference given by an ARM expression is not judged here."""

    id = "HPCLZ-TPL-062"
    severity = Severity.ERROR
    title = "Platform guest patching on an image Azure does not patch"
    fix = "Leave patchMode ImageDefault on that VM (no InGuestPatch assignment) and patch it in the guest "
    "(docs/patching.md), or boot it from a listed image."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        from hpclz.catalog.guest_patching import platform_patching_supported

        for found in ctx.resources:
            if found.type.lower() != VM:
                continue
            props = _props(found.resource)
            linux = (props.get("osProfile") or {}).get("linuxConfiguration") or {}
            settings = linux.get("patchSettings") if isinstance(linux, dict) else None
            if not isinstance(settings, dict) or settings.get("patchMode") != "AutomaticByPlatform":
                continue
            image = (props.get("storageProfile") or {}).get("imageReference")
            if isinstance(image, str) and image.startswith("["):
                continue
            if isinstance(image, dict) and any(str(v).startswith("[") for v in image.values()):
                continue
            if not platform_patching_supported(image):
                shown = (
                    ":".join(str(image.get(k, "")) for k in ("publisher", "offer", "sku"))
                    if isinstance(image, dict) and "publisher" in image
                    else "a custom image"
                )
                yield self.finding(
                    ctx,
                    (*found.path, "properties", "osProfile", "linuxConfiguration", "patchSettings", "patchMode"),
                    f"{found.label}: patchMode AutomaticByPlatform on {shown}, which Azure's guest patching does "
                    "not support",
                )


class HostMaintenanceOnVm(Rule[TemplateContext]):
    """Host scope is for isolated VMs, isolated scale sets and dedicated hosts; ordinary VMs take InGuestPatch
    (learn.microsoft.com/azure/virtual-machines/maintenance-configurations, "Scopes")."""

    id = "HPCLZ-TPL-033"
    severity = Severity.ERROR
    title = "Host-scope maintenance configuration assigned to a virtual machine"
    fix = "Use maintenanceScope InGuestPatch for a VM (Host only for isolated sizes and dedicated hosts)."

    def check(self, ctx: TemplateContext) -> Iterable[Finding]:
        host = {
            str(r.resource.get("name", ""))
            for r in ctx.resources
            if r.type.lower() == MAINTENANCE and _props(r.resource).get("maintenanceScope") == "Host"
        }
        for found in ctx.resources:
            if found.type.lower() != ASSIGNMENT or "virtualMachines/" not in str(found.resource.get("scope", "")):
                continue
            configuration = str(_props(found.resource).get("maintenanceConfigurationId", ""))
            if any(f"'{name}'" in configuration for name in host):
                yield self.finding(ctx, found.path, f"{found.label}: a Host-scope configuration on an ordinary VM")
