"""The calls hpclz makes to Azure Resource Manager, with plain-dict results (REST shapes, camelCase).

Callers never see SDK models: SDK models are mappings with REST keys, turned into dicts here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from hpclz.arm.api_versions import pinned_version
from hpclz.azure.clients import AzureClients
from hpclz.render.model import Deployment, Scope

# Microsoft.Features is not in the pinned schema set: the api-version `az feature show` uses.
FEATURES_API = "2021-07-01"

ROLE_ASSIGNMENT_API = pinned_version("Microsoft.Authorization/roleAssignments") or "2022-04-01"
IDENTITY_API = pinned_version("Microsoft.ManagedIdentity/userAssignedIdentities") or "2023-01-31"
KEY_VAULT_API = pinned_version("Microsoft.KeyVault/vaults") or "2023-07-01"
NETWORK_API = pinned_version("Microsoft.Network/virtualNetworks") or "2024-05-01"
STORAGE_API = pinned_version("Microsoft.Storage/storageAccounts") or "2023-05-01"


# Microsoft.MarketplaceOrdering agreements (azure-rest-api-specs@e5e3b4c:specification/marketplaceordering/
# resource-manager/Microsoft.MarketplaceOrdering/stable/2021-01-01/Agreements.json), the version `az vm image terms
# show` calls; offerType "virtualmachine" is the only one the spec allows.
MARKETPLACE_ORDERING_API = "2021-01-01"

# Compute Gallery (GalleryRP) and managed images (ComputeRP) API versions, from azure-rest-api-specs
# specification/compute/resource-manager/Microsoft.Compute/{GalleryRP/stable/2023-07-03,ComputeRP/stable/2024-03-01}.
GALLERY_API = "2023-07-03"
MANAGED_IMAGE_API = "2024-03-01"


def image_api_version(resource_id: str) -> str:
    return GALLERY_API if "/galleries/" in resource_id.lower() else MANAGED_IMAGE_API


def plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def plain_dict(value: Any) -> dict[str, Any]:
    """An ARM answer (an SDK model, itself a mapping) as a plain dict: every ARM body is a JSON object."""
    return cast(dict[str, Any], plain(value))


def deployment_body(deployment: Deployment, secure: Mapping[str, str], tags: Mapping[str, str]) -> dict[str, Any]:
    """The PUT/validate/what-if body. Secure values exist only here, in memory, on their way to ARM."""
    parameters = {k: {"value": v} for k, v in deployment.parameters.items()}
    parameters.update({k: {"value": v} for k, v in secure.items()})
    body: dict[str, Any] = {
        "properties": {"mode": "Incremental", "template": deployment.template, "parameters": parameters},
        "tags": dict(tags),
    }
    if deployment.scope is Scope.SUBSCRIPTION:
        body["location"] = deployment.location
    return body


def _unless_missing(get: Callable[[], Any]) -> dict[str, Any] | None:
    """A GET's body as a plain dict; None where ARM answers 404."""
    from azure.core.exceptions import ResourceNotFoundError

    try:
        return plain_dict(get())
    except ResourceNotFoundError:
        return None


class Arm:
    def __init__(self, clients: AzureClients):
        self.clients = clients

    @property
    def subscription_id(self) -> str:
        return self.clients.subscription_id

    # ----- deployments -----
    def get_deployment(self, d: Deployment) -> dict[str, Any] | None:
        ops = self.clients.deployments.deployments
        if d.scope is Scope.SUBSCRIPTION:
            return _unless_missing(lambda: ops.get_at_subscription_scope(d.name))
        return _unless_missing(lambda: ops.get(d.resource_group, d.name))

    def submit(self, d: Deployment, body: dict[str, Any]) -> dict[str, Any]:
        """Start a deployment and return ARM's first answer; hpclz polls it itself to show progress."""
        ops = self.clients.deployments.deployments
        if d.scope is Scope.SUBSCRIPTION:
            poller = ops.begin_create_or_update_at_subscription_scope(d.name, body, polling=False)
        else:
            poller = ops.begin_create_or_update(d.resource_group, d.name, body, polling=False)
        return plain_dict(poller.result())

    def operations(self, d: Deployment) -> list[dict[str, Any]]:
        ops = self.clients.deployments.deployment_operations
        if d.scope is Scope.SUBSCRIPTION:
            return [plain_dict(o) for o in ops.list_at_subscription_scope(d.name)]
        return [plain_dict(o) for o in ops.list(d.resource_group, d.name)]

    def validate(self, d: Deployment, body: dict[str, Any]) -> dict[str, Any]:
        ops = self.clients.deployments.deployments
        if d.scope is Scope.SUBSCRIPTION:
            return plain_dict(ops.begin_validate_at_subscription_scope(d.name, body).result())
        return plain_dict(ops.begin_validate(d.resource_group, d.name, body).result())

    def what_if(self, d: Deployment, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """ARM's what-if for one deployment: the raw result ({status, properties: {changes: [...]}})."""
        ops = self.clients.deployments.deployments
        request = dict(body or deployment_body(d, {}, {}))
        request["properties"] = {**request["properties"], "whatIfSettings": {"resultFormat": "FullResourcePayloads"}}
        request.pop("tags", None)
        if d.scope is Scope.SUBSCRIPTION:
            request["location"] = d.location
            return plain_dict(ops.begin_what_if_at_subscription_scope(d.name, request).result())
        return plain_dict(ops.begin_what_if(d.resource_group, d.name, request).result())

    def cancel(self, d: Deployment) -> None:
        ops = self.clients.deployments.deployments
        if d.scope is Scope.SUBSCRIPTION:
            ops.cancel_at_subscription_scope(d.name)
        else:
            ops.cancel(d.resource_group, d.name)

    # ----- resource groups, resources, providers -----
    def get_group(self, name: str) -> dict[str, Any] | None:
        return _unless_missing(lambda: self.clients.resources.resource_groups.get(name))

    def group_resources(self, name: str) -> list[dict[str, Any]]:
        return [plain(r) for r in self.clients.resources.resources.list_by_resource_group(name)]

    def delete_group(self, name: str) -> None:
        self.clients.resources.resource_groups.begin_delete(name).result()

    def get_resource(self, resource_id: str, api_version: str) -> dict[str, Any] | None:
        return _unless_missing(lambda: self.clients.resources.resources.get_by_id(resource_id, api_version=api_version))

    def role_assignment(self, resource_id: str) -> dict[str, Any] | None:
        """An assignment's properties (roleDefinitionId, principalId, scope): what it grants, to whom, where."""
        found = self.get_resource(resource_id, ROLE_ASSIGNMENT_API)
        props = (found or {}).get("properties")
        return props if isinstance(props, dict) else None

    def identity_principal(self, resource_id: str) -> str | None:
        """A user-assigned identity's principal (object) ID, which its role assignments name."""
        found = self.get_resource(resource_id, IDENTITY_API)
        principal = ((found or {}).get("properties") or {}).get("principalId")
        return principal if isinstance(principal, str) and principal else None

    def delete_resource(self, resource_id: str, api_version: str) -> None:
        self.clients.resources.resources.begin_delete_by_id(resource_id, api_version=api_version).result()

    def provider_state(self, namespace: str) -> str:
        return str(plain(self.clients.resources.providers.get(namespace)).get("registrationState", "Unknown"))

    def virtual_network(self, resource_id: str) -> dict[str, Any] | None:
        """An existing VNet with its subnets (prefixes, delegations, NSGs) and peerings; None when absent. A VNet
        in another subscription (a hub) is read by ID through the generic client with the Network API version."""
        parts = resource_id.split("/")
        subscription, group, name = parts[2], parts[4], parts[-1]
        if subscription.lower() != self.subscription_id.lower():
            return self.get_resource(resource_id, NETWORK_API)
        return _unless_missing(lambda: self.clients.network.virtual_networks.get(group, name))

    def name_available(self, namespace: str, resource_type: str, name: str, api_version: str) -> dict[str, Any]:
        """checkNameAvailability of a provider with global names: {nameAvailable, reason, message}
        (Storage Accounts - Check Name Availability; Vaults - Check Name Availability)."""
        from azure.core.rest import HttpRequest

        url = f"/subscriptions/{self.subscription_id}/providers/{namespace}/checkNameAvailability"
        request = HttpRequest(
            "POST", url, params={"api-version": api_version}, json={"name": name, "type": resource_type}
        )
        response = self.clients.resources.send_request(request)
        response.raise_for_status()
        return dict(response.json())

    def deleted_vault(self, location: str, name: str) -> dict[str, Any] | None:
        """A soft-deleted vault holding `name` in `location` (Vaults - Get Deleted); None when there is none."""
        resource_id = f"/subscriptions/{self.subscription_id}/providers/Microsoft.KeyVault/locations/{location}/deletedVaults/{name}"
        return self.get_resource(resource_id, KEY_VAULT_API)

    def feature_state(self, namespace: str, feature: str) -> str:
        """A preview feature's registration (`az feature show`): Microsoft.Features answers for every feature."""
        resource_id = f"/subscriptions/{self.subscription_id}/providers/Microsoft.Features/providers/{namespace}/features/{feature}"
        found = self.get_resource(resource_id, FEATURES_API)
        properties = (found or {}).get("properties") or {}
        return str(properties.get("state", "NotRegistered"))

    # ----- compute facts for live preflight -----
    def custom_image(self, resource_id: str) -> dict[str, Any] | None:
        """A gallery image version or definition, or a managed image, as ARM returns it; None when not found."""
        return self.get_resource(resource_id, image_api_version(resource_id))

    def marketplace_image(self, location: str, urn: str) -> dict[str, Any] | None:
        """A marketplace image version (Virtual Machine Images - Get) in a region; None where Azure answers 404
        ("Artifact: VMImage was not found.")."""
        publisher, offer, sku, version = urn.split(":")
        images = self.clients.compute.virtual_machine_images
        return _unless_missing(lambda: images.get(location, publisher, offer, sku, version))

    def marketplace_terms(self, publisher: str, offer: str, plan: str) -> dict[str, Any]:
        """A Marketplace plan's terms for this subscription (MarketplaceAgreements_Get: GET .../providers/
        Microsoft.MarketplaceOrdering/offerTypes/virtualmachine/publishers/{publisher}/offers/{offer}/plans/{plan}/
        agreements/current): AgreementTerms, whose properties.accepted is true "If any version of the terms have been
        accepted, otherwise false" (Agreements.json at 2021-01-01). No azure-mgmt package is needed for one GET: the
        request goes through the resource client's pipeline (its credential, retries and error mapping)."""
        from azure.core.rest import HttpRequest

        url = (
            f"/subscriptions/{self.subscription_id}/providers/Microsoft.MarketplaceOrdering/offerTypes/virtualmachine"
            f"/publishers/{publisher}/offers/{offer}/plans/{plan}/agreements/current"
        )
        request = HttpRequest("GET", url, params={"api-version": MARKETPLACE_ORDERING_API})
        response = self.clients.resources.send_request(request)
        response.raise_for_status()
        return dict(response.json())

    def skus(self, location: str) -> list[dict[str, Any]]:
        return [plain(s) for s in self.clients.compute.resource_skus.list(filter=f"location eq '{location}'")]

    def usages(self, location: str) -> list[dict[str, Any]]:
        return [plain(u) for u in self.clients.compute.usage.list(location)]
