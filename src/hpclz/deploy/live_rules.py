"""Live preflight rules: facts only Azure knows (provider registration, ARM validation, SKUs, quota).

They run in `hpclz deploy` when credentials are available, never in the offline `hpclz validate`.
The adapter gathers the facts into a LiveContext; the rules only compare them with the config.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hpclz.catalog import load_availability
from hpclz.config.loader import LoadedConfig
from hpclz.config.network import SUBNET_ROLES, ExistingVnet
from hpclz.config.source_map import SourceMap
from hpclz.findings import Finding, Severity
from hpclz.naming import NameBuilder
from hpclz.rules.base import Rule
from hpclz.rules.config.compute import GEN2_ONLY_SIZES


@dataclass
class LiveContext:
    loaded: LoadedConfig
    location: str
    unregistered: dict[str, str] = field(default_factory=dict)  # namespace -> registration state
    validation_errors: dict[str, str] = field(default_factory=dict)  # deployment -> innermost ARM error
    skus: list[dict[str, Any]] | None = None  # None: the SKU API could not be read
    usages: list[dict[str, Any]] | None = None
    unavailable: dict[str, str] = field(default_factory=dict)  # which live API failed -> why
    features: dict[str, str] = field(default_factory=dict)  # "Namespace/Feature" the templates need -> state
    existing_vnet: dict[str, Any] | None = None  # network.vnet existing, as read; {}: absent; None: not read
    deleted_vault: dict[str, Any] | None = None  # a soft-deleted vault holding the Key Vault's name, if any
    hub_vnet: dict[str, Any] | None = None  # network.hub_peering's remote VNet as read; {}: absent; None: not read
    names_taken: dict[str, str] = field(default_factory=dict)  # global name this zone would create -> ARM's reason
    images: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # custom image ID -> ARM body, None: 404

    @property
    def source(self) -> SourceMap | None:
        return self.loaded.source

    def vm_sizes(self) -> list[tuple[tuple[str | int, ...], str, int]]:
        """(config path, VM size, node count at full scale) for every VM role."""
        return [(path, size, count) for path, size, count, _spot in self.vm_roles()]

    def vm_roles(self) -> list[tuple[tuple[str | int, ...], str, int, bool]]:
        """(config path, VM size, node count at full scale, spot?) for every VM role."""
        compute = self.loaded.config.compute
        out: list[tuple[tuple[str | int, ...], str, int, bool]] = [
            (("compute", role, "vm_size"), size, count, False) for role, size, count in compute.service_vms()
        ]
        for i, p in enumerate(compute.partitions):
            out.append((("compute", "partitions", i, "vm_size"), p.vm_size, p.max_nodes, p.priority == "spot"))
        return out

    def sku(self, name: str) -> dict[str, Any] | None:
        for s in self.skus or []:
            if s.get("resourceType") == "virtualMachines" and str(s.get("name", "")).lower() == name.lower():
                return s
        return None


def capability(sku: dict[str, Any], name: str) -> str | None:
    for c in sku.get("capabilities") or []:
        if c.get("name") == name:
            return str(c.get("value"))
    return None


class ProviderNotRegistered(Rule[LiveContext]):
    """ARM refuses every resource of a provider namespace the subscription has not registered, and only
    says so mid-deployment. Source: learn.microsoft.com/azure/azure-resource-manager/management/resource-providers-and-types."""

    id = "HPCLZ-ORG-101"
    severity = Severity.ERROR
    title = "A resource provider the templates use is not registered in the subscription"
    fix = "Register it: az provider register --namespace <namespace>, then wait for 'Registered'."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for namespace, state in sorted(ctx.unregistered.items()):
            yield self.finding(
                ctx,
                ("metadata", "subscription_id"),
                f"provider {namespace} is {state}",
                fix=f"az provider register --namespace {namespace}",
            )


class ArmValidationFailed(Rule[LiveContext]):
    """ARM's own validate call (template, parameters, policy, permissions) failed for a deployment."""

    id = "HPCLZ-TPL-101"
    severity = Severity.ERROR
    title = "Azure Resource Manager rejected a deployment in its validate call"
    fix = "Read ARM's message: it names the template problem, the denying policy or the missing permission."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for deployment, error in sorted(ctx.validation_errors.items()):
            yield self.finding(ctx, ("metadata",), f"deployment {deployment}: {error}")


class SkuNotOffered(Rule[LiveContext]):
    """A VM size the region does not offer fails every node of its partition. Source: the Compute
    resource SKUs API (learn.microsoft.com/rest/api/compute/resource-skus/list). The fix names the regions
    where published captures show the size (hpclz.catalog availability.json), a did-you-mean offline data
    can give but never contradict: only Azure knows what this subscription may use."""

    id = "HPCLZ-CMP-101"
    severity = Severity.ERROR
    title = "A VM size is not offered in the region"
    fix = "Pick a region that offers the size, or another size (az vm list-skus --location <region> --size <size>)."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        if ctx.skus is None:
            return
        for path, size, _count in ctx.vm_sizes():
            if ctx.sku(size) is None:
                yield self.finding(ctx, path, f"{size} is not offered in {ctx.location}", fix=_elsewhere(size, ctx))


def _elsewhere(size: str, ctx: LiveContext) -> str | None:
    known = [r for r in load_availability().regions_offering(size) if r != ctx.location.lower()]
    if not known:
        return None
    return f"Regions published captures show offering {size}: {', '.join(known)}; or pick another size."


class SkuRestricted(Rule[LiveContext]):
    """A size can be listed yet restricted for this subscription (NotAvailableForSubscription) in the
    region or some zones; nodes then fail to allocate. Source: the `restrictions` of the resource SKUs API."""

    id = "HPCLZ-CMP-102"
    severity = Severity.ERROR
    title = "A VM size is restricted for this subscription in the region or a zone"
    fix = "Ask Azure support to lift the restriction (a quota/access request), or choose another region or size."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for path, size, _count in ctx.vm_sizes():
            sku = ctx.sku(size)
            for r in (sku or {}).get("restrictions") or []:
                info = r.get("restrictionInfo") or {}
                zones = info.get("zones") or []
                where = f"zones {', '.join(zones)}" if r.get("type") == "Zone" else ctx.location
                yield self.finding(
                    ctx,
                    path,
                    f"{size} is restricted in {where}: {r.get('reasonCode', 'restricted')}",
                    severity=Severity.WARNING if r.get("type") == "Zone" else None,
                )


class QuotaShort(Rule[LiveContext]):
    """Quota is per VM family and region (spot VMs draw on one shared low-priority quota, and every
    regular VM also on the regional total); a partition that cannot reach max_nodes stalls jobs with
    allocation errors long after deploy. vCPUs come from hpclz.catalog, else the SKU API's
    capabilities; usage from the Compute usage API (usage.list)."""

    id = "HPCLZ-CMP-103"
    severity = Severity.WARNING
    title = "vCPU quota left in a VM family is less than the partitions need at full scale"
    fix = "Request more quota for the family (Azure portal > Quotas), or lower max_nodes."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        if ctx.skus is None or ctx.usages is None:
            return
        from hpclz.catalog import load_catalog

        catalog = load_catalog()
        free = {
            str((u.get("name") or {}).get("value", "")).lower(): int(u.get("limit", 0)) - int(u.get("currentValue", 0))
            for u in ctx.usages
        }
        need: dict[str, tuple[int, tuple[str | int, ...], list[str]]] = {}

        def add(family: str, vcpus: int, path: tuple[str | int, ...], size: str) -> None:
            total, first, sizes = need.get(family, (0, path, []))
            need[family] = (total + vcpus, first, [*sizes, size])

        for path, size, count, spot in ctx.vm_roles():
            known, sku = catalog.sku(size), ctx.sku(size)
            vcpus = known.vcpus if known else int(capability(sku, "vCPUs") or 0) if sku else 0
            family = (sku or {}).get("family") or (known.quota_family if known else None)
            if not vcpus or not family:
                continue
            if spot:
                add(catalog.spot_quota_family, vcpus * count, path, size)
                continue
            add(str(family), vcpus * count, path, size)
            add("cores", vcpus * count, path, size)
        for family, (total, path, sizes) in sorted(need.items()):
            available = free.get(family.lower())
            if available is not None and available < total:
                yield self.finding(
                    ctx,
                    path,
                    f"{family} needs {total} vCPUs at full scale ({', '.join(sorted(set(sizes)))}); "
                    f"{max(available, 0)} left in {ctx.location}",
                )


class FeatureNotRegistered(Rule[LiveContext]):
    """`encryptionAtHost: true` on a VM or scale set fails until the subscription has registered the
    Microsoft.Compute/EncryptionAtHost feature: `az feature register --namespace Microsoft.Compute --name
    EncryptionAtHost`, wait for Registered, then re-register the provider (MicrosoftDocs/azure-compute-docs@055347c:
    articles/virtual-machines/linux/disks-enable-host-based-encryption-cli.md)."""

    id = "HPCLZ-CMP-107"
    severity = Severity.ERROR
    title = "A subscription feature the templates need is not registered"
    fix = "az feature register --namespace <namespace> --name <feature>; wait for Registered; az provider register."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for name, state in sorted(ctx.features.items()):
            if state == "Registered":
                continue
            namespace, feature = name.split("/", 1)
            yield self.finding(
                ctx,
                ("compute", "cyclecloud", "vm_size"),
                f"feature {name} is {state}; encryptionAtHost needs it Registered",
                fix=f"az feature register --namespace {namespace} --name {feature}, wait for 'Registered', then "
                f"az provider register --namespace {namespace}",
            )


class HubHasNoGateway(Rule[LiveContext]):
    """`useRemoteGateways` needs a VPN or ExpressRoute gateway in the hub: a virtual network gateway sits in the
    hub's GatewaySubnet, whose ipConfigurations then name it (learn.microsoft.com/azure/virtual-network/
    virtual-network-peering-overview; subnet shape: azure-rest-api-specs Microsoft.Network VirtualNetworkGet
    examples). The config's hub_gateway flag is only a declaration: this reads the hub."""

    id = "HPCLZ-NET-102"
    severity = Severity.ERROR
    title = "The hub VNet has no gateway for use_remote_gateways"
    fix = "Deploy the hub's VPN/ExpressRoute gateway first, or set network.hub_peering.use_remote_gateways: false."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        peering = ctx.loaded.config.network.hub_peering
        if peering is None or not peering.use_remote_gateways or ctx.hub_vnet is None:
            return
        where = ("network", "hub_peering", "use_remote_gateways")
        if not ctx.hub_vnet:
            yield self.finding(ctx, where, f"the hub VNet {peering.remote_vnet_id} does not exist")
            return
        gateway = _subnets(ctx.hub_vnet).get("gatewaysubnet")
        configs = (gateway or {}).get("ipConfigurations") or []
        if not any("/virtualnetworkgateways/" in str(c.get("id", "")).lower() for c in configs):
            yield self.finding(ctx, where, "the hub VNet's GatewaySubnet holds no virtual network gateway")


class GlobalNameTaken(Rule[LiveContext]):
    """Storage account and Key Vault names are unique across Azure: a name someone else holds fails the
    deployment mid-way (StorageAccountAlreadyTaken, VaultAlreadyExists). Preflight asks the provider's
    checkNameAvailability for each name the zone would create and does not own yet (Storage Accounts - Check Name
    Availability, azure-rest-api-specs Microsoft.Storage example StorageAccountCheckNameAvailability.json)."""

    id = "HPCLZ-STO-101"
    severity = Severity.ERROR
    title = "A storage account or Key Vault name the zone needs is taken"
    fix = "Set organization.naming.unique_suffix to another value (or change metadata.name)."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for name, reason in sorted(ctx.names_taken.items()):
            yield self.finding(ctx, ("organization", "naming", "unique_suffix"), f"{name}: {reason}")


class SoftDeletedVaultHoldsName(Rule[LiveContext]):
    """A soft-deleted vault keeps its name until its retention ends, and with purge protection it cannot be purged
    before: creating a vault of that name fails (MicrosoftDocs/azure-security-docs@025b849:articles/key-vault/
    general/soft-delete-overview.md). A destroy then redeploy of the same landing zone meets exactly this."""

    id = "HPCLZ-IDN-101"
    severity = Severity.ERROR
    title = "A soft-deleted Key Vault holds the name the landing zone needs"
    fix = "Recover it (az keyvault recover), purge it if purge protection is off, or set organization.naming.unique_suffix."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        deleted = ctx.deleted_vault
        if not deleted:
            return
        properties = deleted.get("properties") or {}
        protected = bool(properties.get("purgeProtectionEnabled"))
        name = deleted.get("name")
        yield self.finding(
            ctx,
            ("identity", "key_vault"),
            f"vault {name} was deleted on {properties.get('deletionDate')} and holds its name until "
            f"{properties.get('scheduledPurgeDate')}"
            + (" (purge protection: it cannot be purged)" if protected else ""),
            fix=f"az keyvault recover --name {name}, or set organization.naming.unique_suffix to a new value"
            + ("" if protected else f", or az keyvault purge --name {name}"),
        )


class LiveFactsUnavailable(Rule[LiveContext]):
    """When a live API is unreachable or forbidden the check is skipped, and said so, rather than crash."""

    id = "HPCLZ-CMP-104"
    severity = Severity.WARNING
    title = "A live preflight check could not read Azure and was skipped"
    fix = "Grant the identity Reader on the subscription (Microsoft.Compute/skus/read, usages/read), or ignore."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for api, why in sorted(ctx.unavailable.items()):
            yield self.finding(ctx, ("metadata", "location"), f"{api} unavailable: {why}")


# network.vnet.mode: existing -- hpclz creates nothing in a VNet it does not own but NSGs, so every subnet the
# config names must already be there, with its prefix and its delegation (read through azure-mgmt-network).
VNET = ("network", "vnet")


def _subnets(vnet: dict[str, Any]) -> dict[str, dict[str, Any]]:
    listed = (vnet.get("properties") or {}).get("subnets") or []
    return {str(s.get("name", "")).lower(): s.get("properties") or {} for s in listed}


class ExistingVnetMatches(Rule[LiveContext]):
    """An `existing` VNet is read before anything is deployed: a missing subnet, another prefix or a missing
    delegation would otherwise fail mid-deployment (InvalidResourceReference, SubnetMissingRequiredDelegation)
    or, worse, deploy NSG rules for addresses the subnet does not have."""

    id = "HPCLZ-NET-101"
    severity = Severity.ERROR
    title = "The existing VNet does not match what the config declares"
    fix = "Correct network.vnet (resource_id, address_space, subnets) to what Azure has, or change the VNet."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        vnet_config = ctx.loaded.config.network.vnet
        if not isinstance(vnet_config, ExistingVnet) or ctx.existing_vnet is None:
            return
        if not ctx.existing_vnet:
            yield self.finding(ctx, (*VNET, "resource_id"), f"{vnet_config.resource_id} does not exist")
            return
        yield from self._address_space(ctx, vnet_config)
        yield from self._subnets(ctx, vnet_config)

    def _address_space(self, ctx: LiveContext, config: ExistingVnet) -> Iterator[Finding]:
        actual = ((ctx.existing_vnet or {}).get("properties") or {}).get("addressSpace") or {}
        prefixes = set(actual.get("addressPrefixes") or [])
        for index, space in enumerate(config.address_space):
            if str(space) not in prefixes:
                yield self.finding(
                    ctx,
                    (*VNET, "address_space", index),
                    f"{space} is not an address prefix of the VNet (it has {', '.join(sorted(prefixes)) or 'none'})",
                )

    def _subnets(self, ctx: LiveContext, config: ExistingVnet) -> Iterator[Finding]:
        actual = _subnets(ctx.existing_vnet or {})
        names = NameBuilder(ctx.loaded.config)
        for role in SUBNET_ROLES:
            subnet = getattr(config.subnets, role)
            if subnet is None:
                continue
            name = subnet.name or names.subnet(role)
            where = (*VNET, "subnets", role)
            found = actual.get(name.lower())
            if found is None:
                yield self.finding(ctx, (*where, "name"), f"subnet {name} is not in the VNet")
                continue
            if found.get("addressPrefix") != str(subnet.cidr):
                yield self.finding(
                    ctx, (*where, "cidr"), f"subnet {name} is {found.get('addressPrefix')}, not {subnet.cidr}"
                )
            services = {str((d.get("properties") or {}).get("serviceName")) for d in found.get("delegations") or []}
            if subnet.delegation and subnet.delegation not in services:
                yield self.finding(
                    ctx, (*where, "delegation"), f"subnet {name} is not delegated to {subnet.delegation}"
                )


def _region(name: object) -> str:
    """ARM writes regions both ways: `eastus` (location of a managed image) and `East US` (targetRegions)."""
    return "".join(str(name).split()).lower()


def gallery_definition(image_id: str) -> str | None:
    """The image definition a gallery image version belongs to (its generation and OS state live there)."""
    head, sep, _ = image_id.rpartition("/versions/")
    return head if sep and "/galleries/" in image_id.lower() else None


def image_regions(image_id: str, body: dict[str, Any]) -> list[str]:
    """Where VMs can be created from this image: a gallery version's target regions, else the image's location."""
    if "/versions/" in image_id.lower():
        targets = ((body.get("properties") or {}).get("publishingProfile") or {}).get("targetRegions") or []
        return [_region(t.get("name")) for t in targets if isinstance(t, dict)]
    return [_region(body.get("location"))] if body.get("location") else []


class CustomImageUsable(Rule[LiveContext]):
    """A custom image must exist, be readable, and be in the landing zone's region: a gallery image version
    deploys only in the regions it is replicated to (publishingProfile.targetRegions, e.g. "West US" in
    azure-rest-api-specs GalleryRP/stable/2023-07-03/examples/galleryExamples/GalleryImageVersion_Get_WithVhdAsSource
    .json), a managed image only in its own location (ComputeRP/stable/2024-03-01 Image_Get.json). CycleCloud
    only finds out when it starts the node, long after deploy."""

    id = "HPCLZ-CMP-105"
    severity = Severity.ERROR
    title = "Custom image missing, unreadable or not in the region"
    fix = (
        "Replicate the image version to the region (az sig image-version update --add "
        "publishingProfile.targetRegions name=<region>), fix the ID, or grant the deploying identity Reader on it."
    )

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for path, who, _, image in ctx.loaded.config.compute.custom_images():
            if image not in ctx.images:
                continue  # never asked, or the read failed (HPCLZ-CMP-104 says which)
            body = ctx.images[image]
            if body is None:
                yield self.finding(ctx, path, f"{who}: image {image} was not found (or is not visible to you)")
                continue
            if "/galleries/" in image.lower() and "/versions/" not in image.lower():
                continue  # a definition: Azure picks its latest version, whose regions this read does not show
            regions = image_regions(image, body)
            if _region(ctx.location) not in regions:
                yield self.finding(
                    ctx, path, f"{who}: image is available in {', '.join(regions) or 'no region'}, not {ctx.location}"
                )


class CustomImageFitsNodes(Rule[LiveContext]):
    """Two properties of a gallery image definition decide whether its nodes boot as cluster nodes:
    hyperVGeneration (a size that boots only Generation 2 images, such as ND H100 v5 per its series page,
    cannot start from a V1 definition) and osState (CycleCloud needs a Generalized image: "Specialized images
    ... lack the osProfile that CycleCloud needs", learn.microsoft.com/azure/cyclecloud/how-to/create-custom-image).
    Both are in the definition ARM returns (GalleryRP/stable/2023-07-03 GalleryImage_Get.json:
    "osState": "Generalized", "hyperVGeneration": "V1")."""

    id = "HPCLZ-CMP-106"
    severity = Severity.ERROR
    title = "Custom image is Generation 1 on a Gen2-only size, or specialized"
    fix = "Use a Generalized image definition with hyperVGeneration V2 (a definition's generation cannot change)."

    def check(self, ctx: LiveContext) -> Iterable[Finding]:
        for path, who, size, image in ctx.loaded.config.compute.custom_images():
            definition = ctx.images.get(gallery_definition(image) or image) if "/galleries/" in image.lower() else None
            props = (definition or {}).get("properties") or {}
            if size in GEN2_ONLY_SIZES and props.get("hyperVGeneration") == "V1":
                yield self.finding(ctx, path, f"{who}: {size} boots only Generation 2 images; this definition is V1")
            if props.get("osState") == "Specialized":
                yield self.finding(ctx, path, f"{who}: the image is Specialized; CycleCloud nodes need Generalized")


LIVE_RULES: tuple[type[Rule[Any]], ...] = (
    ProviderNotRegistered,
    ArmValidationFailed,
    SkuNotOffered,
    SkuRestricted,
    QuotaShort,
    FeatureNotRegistered,
    ExistingVnetMatches,
    HubHasNoGateway,
    GlobalNameTaken,
    SoftDeletedVaultHoldsName,
    LiveFactsUnavailable,
    CustomImageUsable,
    CustomImageFitsNodes,
)
