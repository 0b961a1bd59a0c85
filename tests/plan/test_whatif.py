"""ARM what-if results mapped into the change set: the recorded bodies, then noise and edge cases."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hpclz.errors import ExitCode, HpclzError
from hpclz.plan.changeset import Action, Policy
from hpclz.plan.resources import parse_resource_id
from hpclz.plan.whatif import whatif_changeset
from tests.conftest import FIXTURES, require

RECORDED = FIXTURES / "arm"
RG = "/subscriptions/s/resourceGroups/rg/providers"


def recorded(name: str) -> dict[str, Any]:
    path = RECORDED / f"{name}.json"
    require(path.exists(), f"recorded what-if body {path}")
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def mapped(*changes: dict[str, Any]) -> Any:
    body = {"status": "Succeeded", "properties": {"changes": list(changes)}}
    return whatif_changeset({"hpclz-t-dev-network": body}, landing_zone="t", environment="dev")


def test_recorded_storage_replication_modify() -> None:
    changes = whatif_changeset({"d": recorded("whatif_modify_recorded")}, landing_zone="t", environment="dev")
    (change,) = changes.resources
    assert (change.type, change.name) == ("Microsoft.Storage/storageAccounts", "storee5brqgpkqv7yo")
    assert change.action is Action.MODIFY
    assert [(p.path, p.before, p.after) for p in change.changes] == [("sku.name", "Standard_LRS", "Standard_GRS")]
    assert change.verdict.policy is Policy.IN_PLACE  # LRS -> GRS adds a geo copy in place
    assert changes.summary.line() == "Plan: 0 to add, 1 to change, 0 to replace, 0 to destroy."


def test_recorded_spec_example_create_and_tag_modify() -> None:
    changes = whatif_changeset({"d": recorded("whatif_create_modify_specexample")}, landing_zone="t", environment="dev")
    by_name = {r.name: r for r in changes.resources}
    assert by_name["myNewIdentity"].action is Action.CREATE
    modified = by_name["myExistingIdentity"]
    assert modified.action is Action.MODIFY
    assert [(p.path, p.kind, p.after) for p in modified.changes] == [("tags.myNewTag", Action.CREATE, "my tag value")]
    assert changes.summary.add == 1 and changes.summary.change == 1


def test_noise_is_filtered_and_counted() -> None:
    vnet = f"{RG}/Microsoft.Network/virtualNetworks/vnet"
    changes = mapped(
        {
            "resourceId": vnet,
            "changeType": "Modify",
            "before": {"properties": {"subnets": [{"name": "a", "id": f"{vnet}/subnets/a"}]}},
            "after": {"properties": {"subnets": [{"name": "a"}]}},
            "delta": [
                {"path": "properties.provisioningState", "propertyChangeType": "Delete", "before": "Succeeded"},
                {"path": "properties.resourceGuid", "propertyChangeType": "Delete", "before": "g"},
                {"path": "etag", "propertyChangeType": "Modify", "before": "W/1", "after": "W/2"},
                {"path": "location", "propertyChangeType": "Modify", "before": "East US", "after": "eastus"},
                {"path": "properties.enableDdosProtection", "propertyChangeType": "Delete", "before": False},
                {"path": "properties.flowTimeoutInMinutes", "propertyChangeType": "NoEffect", "after": 4},
                {
                    "path": "properties.subnets",
                    "propertyChangeType": "Array",
                    "children": [
                        {
                            "path": "0",
                            "propertyChangeType": "Modify",
                            "children": [
                                {"path": "id", "propertyChangeType": "Delete", "before": f"{vnet}/subnets/a"},
                                {
                                    "path": "properties.privateEndpointNetworkPolicies",
                                    "propertyChangeType": "Delete",
                                    "before": "Disabled",
                                },
                            ],
                        }
                    ],
                },
            ],
        },
        {"resourceId": f"{RG}/Microsoft.Network/networkSecurityGroups/unmanaged", "changeType": "Ignore"},
    )
    (change,) = changes.resources
    assert change.action is Action.NO_CHANGE
    assert change.changes == []
    assert len(change.noise) == 8  # the subnet's id and default arrive nested: an Array, a Modify item, children
    assert all(p.noise_reason for p in change.noise)
    assert changes.ignored == [f"{RG}/Microsoft.Network/networkSecurityGroups/unmanaged"]
    assert changes.noise_count == 9
    assert not changes.has_changes


def test_real_changes_survive_the_filter() -> None:
    vnet = f"{RG}/Microsoft.Network/virtualNetworks/vnet"
    before = {"properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}, "subnets": []}}
    after = {"properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16", "10.1.0.0/16"]}, "subnets": []}}
    changes = mapped(
        {
            "resourceId": vnet,
            "changeType": "Modify",
            "before": before,
            "after": after,
            "delta": [
                {
                    "path": "properties.addressSpace.addressPrefixes",
                    "propertyChangeType": "Array",
                    "children": [{"path": "1", "propertyChangeType": "Create", "after": "10.1.0.0/16"}],
                },
                {"path": "properties.provisioningState", "propertyChangeType": "Delete", "before": "Succeeded"},
            ],
        }
    )
    (change,) = changes.resources
    # The added range alone, as ARM lists it (an item, not the whole list); judged against the whole list.
    assert [(p.path, p.kind, p.before, p.after) for p in change.changes] == [
        ("properties.addressSpace.addressPrefixes[1]", Action.CREATE, None, "10.1.0.0/16")
    ]
    assert change.verdict.policy is Policy.IN_PLACE
    assert len(change.noise) == 1


def test_lustre_shrunk_in_what_if_is_a_replacement_with_data_loss() -> None:
    changes = mapped(
        {
            "resourceId": f"{RG}/Microsoft.StorageCache/amlFilesystems/amlfs",
            "changeType": "Modify",
            "before": {"properties": {"storageCapacityTiB": 48}},
            "after": {"properties": {"storageCapacityTiB": 32}},
            "delta": [
                {"path": "properties.storageCapacityTiB", "propertyChangeType": "Modify", "before": 48, "after": 32}
            ],
        },
        {
            "resourceId": f"{RG}/Microsoft.Storage/storageAccounts/st/blobServices/default/containers/ckpt",
            "changeType": "Delete",
        },
    )
    lustre, container = changes.resources
    assert (lustre.action, lustre.verdict.policy, lustre.data_loss) == (Action.REPLACE, Policy.REPLACE_DATA, True)
    assert (container.type, container.name) == (
        "Microsoft.Storage/storageAccounts/blobServices/containers",
        "st/default/ckpt",
    )
    assert container.data_loss
    assert changes.summary.line() == "Plan: 0 to add, 0 to change, 1 to replace, 1 to destroy."


def test_sdk_snake_case_result_and_unsupported() -> None:
    body = {
        "status": "Succeeded",
        "changes": [
            {"resource_id": f"{RG}/Microsoft.Network/natGateways/ng", "change_type": "Deploy"},
            {
                "resource_id": f"{RG}/Microsoft.Resources/deployments/linked",
                "change_type": "Unsupported",
                "unsupported_reason": "templateLink is not expanded",
            },
        ],
    }
    changes = whatif_changeset({"d": body}, landing_zone="t", environment="dev")
    (deploy,) = changes.resources
    assert deploy.action is Action.MODIFY and "cannot tell" in deploy.verdict.reason
    assert changes.unsupported == [f"{RG}/Microsoft.Resources/deployments/linked: templateLink is not expanded"]


def test_failed_what_if_is_an_azure_error() -> None:
    body = {"status": "Failed", "error": {"code": "InvalidTemplate", "message": "bad template"}}
    with pytest.raises(HpclzError) as caught:
        whatif_changeset({"d": body}, landing_zone="t", environment="dev")
    assert caught.value.exit_code is ExitCode.AZURE_ERROR
    assert "bad template" in str(caught.value)


@pytest.mark.parametrize(
    ("rid", "expected"),
    [
        ("/subscriptions/s/resourceGroups/rg-x", ("Microsoft.Resources/resourceGroups", "rg-x")),
        (f"{RG}/Microsoft.Network/virtualNetworks/v/subnets/s", ("Microsoft.Network/virtualNetworks/subnets", "v/s")),
        (
            f"{RG}/Microsoft.Storage/storageAccounts/st/providers/Microsoft.Authorization/roleAssignments/g",
            ("Microsoft.Authorization/roleAssignments", "g"),
        ),
    ],
)
def test_parse_resource_id(rid: str, expected: tuple[str, str]) -> None:
    assert parse_resource_id(rid) == expected


def test_an_ignore_from_one_deployment_never_hides_anothers_modify() -> None:
    """Two hpclz deployments into one group: each what-if reports the other's resources as Ignore."""
    real = recorded("whatif_modify_recorded")  # a real Modify of a storage account's sku
    (modify,) = real["properties"]["changes"] if "properties" in real else real["changes"]
    ignore = {"resourceId": modify["resourceId"], "changeType": "Ignore"}
    first = {"status": "Succeeded", "properties": {"changes": [ignore]}}
    for order in ({"a": first, "b": real}, {"b": real, "a": first}):
        changes = whatif_changeset(order, landing_zone="t", environment="dev")
        (change,) = changes.resources
        assert change.action is Action.MODIFY and change.deployment == "b"
        assert changes.ignored == []


def test_a_resource_only_ignored_stays_ignored_once() -> None:
    rid = f"{RG}/Microsoft.Network/natGateways/ng"
    body = {"status": "Succeeded", "properties": {"changes": [{"resourceId": rid, "changeType": "Ignore"}]}}
    changes = whatif_changeset({"a": body, "b": body}, landing_zone="t", environment="dev")
    assert changes.ignored == [rid] and changes.resources == []
