"""State records from a finished deployment, and what destroy keeps."""

from __future__ import annotations

from typing import Any

from hpclz.deploy.destroy import kept_set
from hpclz.deploy.records import outputs_of, resource_records
from hpclz.render.model import Deployment
from hpclz.state.model import ResourceRecord

RG = "/subscriptions/s/resourceGroups/rg"
VNET = f"{RG}/providers/Microsoft.Network/virtualNetworks/vnet1"
FS = f"{RG}/providers/Microsoft.StorageCache/amlFilesystems/fs1"
NSG = f"{RG}/providers/Microsoft.Network/networkSecurityGroups/nsg1"


def _deployment(name: str, component: str, template: dict[str, Any], **fields: Any) -> Deployment:
    """A resource-group deployment into rg in eastus2, as render makes one."""
    return Deployment(
        name=name,
        component=component,
        scope="resourceGroup",
        resource_group="rg",
        location="eastus2",
        template=template,
        **fields,
    )


def _secret(name: str, parameter: str) -> dict[str, Any]:
    """A Key Vault secret in vault kv1 whose value is the template's parameter `parameter`."""
    return {
        "type": "Microsoft.KeyVault/vaults/secrets",
        "apiVersion": "2023-07-01",
        "name": f"kv1/{name}",
        "properties": {"value": f"[parameters('{parameter}')]"},
    }


def test_records_carry_api_version_data_flag_and_rendered_properties() -> None:
    d = _deployment(
        "st",
        "storage",
        {
            "resources": [
                {
                    "type": "Microsoft.StorageCache/amlFilesystems",
                    "apiVersion": "2024-03-01",
                    "name": "fs1",
                    "properties": {"filesystemSubnet": "x"},
                },
                {
                    "type": "Microsoft.Network/virtualNetworks",
                    "apiVersion": "2023-09-01",
                    "name": "vnet1",
                    "tags": {"hpclz-data": "false"},
                },
            ]
        },
    )
    remote = {"properties": {"outputResources": [{"id": FS}], "outputs": {}}}
    ops = [
        {"properties": {"provisioningState": "Succeeded", "targetResource": {"id": VNET}}},
        {"properties": {"provisioningState": "Failed", "targetResource": {"id": NSG}}},
    ]
    records = {r.name: r for r in resource_records(d, remote, ops)}
    assert set(records) == {"fs1", "vnet1"}
    assert records["fs1"].data_bearing and not records["vnet1"].data_bearing
    assert records["fs1"].api_version == "2024-03-01" and records["fs1"].properties == {
        "properties": {"filesystemSubnet": "x"}
    }


def test_secure_outputs_never_reach_state() -> None:
    remote = {
        "properties": {
            "outputs": {
                "ip": {"type": "String", "value": "10.0.0.4"},
                "key": {"type": "SecureString", "value": "s3cret"},
            }
        }
    }
    assert outputs_of(remote) == {"ip": "10.0.0.4"}


def _record(rid: str, rtype: str, props: dict[str, Any] | None = None, data: bool = False) -> ResourceRecord:
    return ResourceRecord(
        id=rid,
        type=rtype,
        name=rid.rsplit("/", 1)[-1],
        api_version="1",
        deployment="d",
        data_bearing=data,
        properties=props or {},
    )


def test_kept_data_keeps_what_it_uses_and_its_group() -> None:
    resources = [
        _record(RG, "Microsoft.Resources/resourceGroups"),
        _record(NSG, "Microsoft.Network/networkSecurityGroups"),
        _record(VNET, "Microsoft.Network/virtualNetworks"),
        _record(
            FS,
            "Microsoft.StorageCache/amlFilesystems",
            {"filesystemSubnet": "[resourceId('Microsoft.Network/virtualNetworks/subnets', 'vnet1', 'lustre')]"},
            data=True,
        ),
    ]
    kept = kept_set(resources, include_data=False)
    assert set(kept) == {FS.lower(), VNET.lower(), RG.lower()}
    assert kept[VNET.lower()] == "used by kept fs1"
    assert kept_set(resources, include_data=True) == {}


def _ops(*ids: str) -> list[dict[str, Any]]:
    return [{"properties": {"provisioningState": "Succeeded", "targetResource": {"id": i}}} for i in ids]


def test_records_hold_the_whole_body_of_children_with_parameters_resolved() -> None:
    account = f"{RG}/providers/Microsoft.Storage/storageAccounts/st1"
    container = f"{account}/blobServices/default/containers/data"
    d = _deployment(
        "st",
        "storage",
        {
            "parameters": {"sku": {"type": "string"}},
            "resources": [
                {
                    "type": "Microsoft.Storage/storageAccounts",
                    "apiVersion": "2023-05-01",
                    "name": "st1",
                    "location": "eastus2",
                    "sku": {"name": "[parameters('sku')]"},
                    "kind": "StorageV2",
                    "tags": {"owner": "me"},
                    "dependsOn": [],
                    "properties": {"minimumTlsVersion": "TLS1_2"},
                },
                {
                    "type": "Microsoft.Storage/storageAccounts/blobServices",
                    "apiVersion": "2023-05-01",
                    "name": "st1/default",
                    "properties": {},
                    "resources": [
                        {
                            "type": "containers",
                            "apiVersion": "2023-05-02",
                            "name": "data",
                            "properties": {"publicAccess": "None"},
                        }
                    ],
                },
            ],
        },
        parameters={"sku": {"value": "Standard_ZRS"}},
    )
    records = {r.type: r for r in resource_records(d, {}, _ops(account, f"{account}/blobServices/default", container))}
    assert records["Microsoft.Storage/storageAccounts"].properties == {
        "location": "eastus2",
        "sku": {"name": "Standard_ZRS"},
        "kind": "StorageV2",
        "tags": {"owner": "me"},
        "properties": {"minimumTlsVersion": "TLS1_2"},
    }
    child = records["Microsoft.Storage/storageAccounts/blobServices/containers"]
    assert (child.name, child.api_version, child.data_bearing) == ("data", "2023-05-02", True)
    assert child.properties == {"properties": {"publicAccess": "None"}}


def test_secure_parameter_values_are_never_recorded() -> None:
    vault = f"{RG}/providers/Microsoft.KeyVault/vaults/kv1"
    secret = f"{vault}/secrets/licence"
    inner = {
        "parameters": {"value": {"type": "secureString", "defaultValue": "inner-default-s3cret"}},
        "resources": [_secret("licence", "value")],
    }
    d = _deployment(
        "id",
        "identity",
        {
            "parameters": {"licence": {"type": "securestring", "defaultValue": "outer-default-s3cret"}},
            "resources": [
                _secret("direct", "licence"),
                {
                    "type": "Microsoft.Resources/deployments",
                    "apiVersion": "2022-09-01",
                    "name": "inner",
                    "properties": {
                        "mode": "Incremental",
                        "parameters": {"value": {"value": "given-to-inner-s3cret"}},
                        "template": inner,
                    },
                },
            ],
        },
        secure_parameters={"licence": "identity.key_vault.secrets.licence"},
    )
    records = {r.name: r for r in resource_records(d, {}, _ops(f"{vault}/secrets/direct", secret))}
    assert records["direct"].properties == {"properties": {"value": "[parameters('licence')]"}}
    assert records["licence"].properties == {"properties": {"value": "[parameters('value')]"}}
    assert "s3cret" not in str([r.model_dump() for r in records.values()])


def test_expression_named_siblings_pair_in_order_and_unknown_ids_are_still_recorded() -> None:
    role = "Microsoft.Authorization/roleAssignments"
    d = _deployment(
        "rbac",
        "identity",
        {
            "resources": [
                {"type": role, "apiVersion": "2022-04-01", "name": f"[guid('{n}')]", "properties": {"principalId": n}}
                for n in ("first", "second")
            ]
        },
    )
    ids = [f"{RG}/providers/{role}/aaaa", f"{RG}/providers/{role}/bbbb", f"{RG}/providers/Microsoft.Web/sites/extra"]
    records = resource_records(d, {"properties": {"outputResources": [{"id": ids[2]}]}}, _ops(*ids[:2]))
    assert [(r.name, r.properties.get("properties")) for r in records] == [
        ("extra", None),
        ("aaaa", {"principalId": "first"}),
        ("bbbb", {"principalId": "second"}),
    ]
    assert [r.api_version for r in records] == ["", "2022-04-01", "2022-04-01"]


ROLE = "Microsoft.Authorization/roleAssignments"
READER = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
GROUP_A = "dde85349-5401-4e33-9197-54cf1fcb7d7b"
GROUP_B = "5f1e0c6a-1b2c-4d3e-8f9a-0b1c2d3e4f5a"
IDENTITY = "[reference(resourceId('rg', 'Microsoft.ManagedIdentity/userAssignedIdentities', 'id-x'), '2023-01-31').principalId]"


def _assignments_deployment() -> Deployment:
    """What render emits: `[guid(...)]` names, the role as subscriptionResourceId(...), a group or an identity."""

    def item(principal: str, key: str, kind: str = "Group") -> dict[str, Any]:
        return {
            "type": ROLE,
            "apiVersion": "2022-04-01",
            "name": f"[guid(resourceGroup().id, {key}, '{READER}')]",
            "properties": {
                "roleDefinitionId": f"[subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '{READER}')]",
                "principalId": principal,
                "principalType": kind,
            },
        }

    return _deployment(
        "rbac",
        "identity",
        {
            "resources": [
                item(GROUP_A, f"'{GROUP_A}'"),
                item(GROUP_B, f"'{GROUP_B}'"),
                item(
                    IDENTITY,
                    "resourceId('rg', 'Microsoft.ManagedIdentity/userAssignedIdentities', 'id-x')",
                    "ServicePrincipal",
                ),
            ]
        },
    )


def _returned(principal: str) -> dict[str, Any]:
    return {
        "roleDefinitionId": f"/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/{READER}",
        "principalId": principal,
        "principalType": "Group",
    }


def test_assignments_pair_by_principal_and_role_when_arm_returns_their_properties() -> None:
    """ARM lists the assignments in another order than the template; each ID still gets its own body."""
    ids = {name: f"{RG}/providers/{ROLE}/{name}" for name in ("aaaa", "bbbb", "iiii")}
    remote = {
        "properties": {
            "outputResources": [
                {"id": ids["iiii"], "properties": _returned("99999999-8888-4777-8666-555555555555")},
                {"id": ids["bbbb"], "properties": _returned(GROUP_B)},
            ]
        }
    }
    ops = [
        {
            "properties": {
                "provisioningState": "Succeeded",
                "targetResource": {"id": ids["aaaa"]},
                "response": {"content": {"properties": _returned(GROUP_A.upper())}},
            }
        }
    ]
    records = {
        r.name: r.properties["properties"]["principalId"]
        for r in resource_records(_assignments_deployment(), remote, ops)
    }
    # The identity's GUID is ARM's to know: it pairs with the one rendered body left at that scope and role.
    assert records == {"bbbb": GROUP_B, "iiii": IDENTITY, "aaaa": GROUP_A}


def test_without_properties_from_arm_assignments_at_a_scope_pair_in_arm_order() -> None:
    """The documented fallback: ARM's outputResources carry only IDs, as do the stand-in's."""
    ids = [f"{RG}/providers/{ROLE}/{name}" for name in ("aaaa", "bbbb", "iiii")]
    records = resource_records(_assignments_deployment(), {}, _ops(*ids))
    assert [r.properties["properties"]["principalId"] for r in records] == [GROUP_A, GROUP_B, IDENTITY]
    assert all(r.properties["properties"]["roleDefinitionId"].endswith(f"'{READER}')]") for r in records)


def test_an_assignment_no_rendered_body_matches_keeps_what_identifies_it() -> None:
    other = "0c7f3a55-2e4b-4c1d-9a8e-6f5d4c3b2a19"
    ids = [f"{RG}/providers/{ROLE}/{name}" for name in ("aaaa", "bbbb", "iiii", "zzzz")]
    remote = {
        "properties": {
            "outputResources": [
                {"id": ids[0], "properties": _returned(GROUP_A)},
                {"id": ids[1], "properties": _returned(GROUP_B)},
                {"id": ids[2], "properties": _returned("99999999-8888-4777-8666-555555555555")},
                {"id": ids[3], "properties": {**_returned(other), "createdOn": "2026-01-01"}},
            ]
        }
    }
    records = {r.name: r for r in resource_records(_assignments_deployment(), remote, [])}
    assert records["zzzz"].properties == {"properties": _returned(other)}
    assert records["iiii"].properties["properties"]["principalId"] == IDENTITY


def test_assignments_to_two_identities_pair_by_the_principals_deploy_looked_up() -> None:
    """Two identities get the same role at one scope; ARM lists them the other way round and returns GUIDs."""
    other = IDENTITY.replace("'id-x'", "'id-y'")
    template = _assignments_deployment().template
    second = {**template["resources"][2], "name": "[guid('y')]"}
    second["properties"] = {**second["properties"], "principalId": other}
    d = _assignments_deployment().model_copy(update={"template": {"resources": [template["resources"][2], second]}})
    ids = {name: f"{RG}/providers/{ROLE}/{name}" for name in ("xxxx", "yyyy")}
    guid_x, guid_y = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    fetched = {ids["yyyy"]: _returned(guid_y), ids["xxxx"]: _returned(guid_x)}
    principals = {
        "/resourcegroups/rg/providers/microsoft.managedidentity/userassignedidentities/id-x": guid_x,
        "/resourcegroups/rg/providers/microsoft.managedidentity/userassignedidentities/id-y": guid_y,
    }
    remote = {"properties": {"outputResources": [{"id": ids["yyyy"]}, {"id": ids["xxxx"]}]}}
    records = {
        r.name: r.properties["properties"]["principalId"]
        for r in resource_records(d, remote, [], fetched=fetched, principals=principals)
    }
    assert records == {"yyyy": other, "xxxx": IDENTITY}
    in_order = {r.name: r.properties["properties"]["principalId"] for r in resource_records(d, remote, [])}
    assert in_order == {"yyyy": IDENTITY, "xxxx": other}  # without them: ARM's order, the wrong way round
