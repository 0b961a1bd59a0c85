"""Offline diff mechanics on hand-made templates and on the state shape deploy records."""

from __future__ import annotations

import re
from typing import Any

from hpclz.plan.changeset import Action, Policy
from hpclz.plan.offline import diff_values, offline_changeset
from hpclz.plan.resources import desired_resources
from hpclz.render.build import build_plan
from hpclz.render.model import Deployment, DeploymentPlan, Scope
from tests.plan.support import applied_state, edited, preset


def one_deployment(*resources: dict[str, Any], parameters: dict[str, Any] | None = None) -> DeploymentPlan:
    template = {
        "parameters": {"size": {"type": "int", "defaultValue": 4}},
        "variables": {"lustre": "amlfs-t"},
        "resources": list(resources),
    }
    deployment = Deployment(
        name="hpclz-t-dev-storage",
        component="storage",
        scope=Scope.RESOURCE_GROUP,
        resource_group="rg-t",
        location="eastus",
        template=template,
        parameters=parameters or {},
    )
    return DeploymentPlan(
        landing_zone="t", environment="dev", location="eastus", config_hash="x", deployments=[deployment]
    )


def lustre(capacity: Any = "[parameters('size')]", sku: str = "AMLFS-Durable-Premium-250") -> dict[str, Any]:
    return {
        "type": "Microsoft.StorageCache/amlFilesystems",
        "apiVersion": "2024-03-01",
        "name": "[variables('lustre')]",
        "location": "eastus",
        "sku": {"name": sku},
        "properties": {"storageCapacityTiB": capacity, "maintenanceWindow": {"dayOfWeek": "Sunday"}},
    }


def vmss(size: str) -> dict[str, Any]:
    return {
        "type": "Microsoft.Compute/virtualMachineScaleSets",
        "apiVersion": "2024-07-01",
        "name": "vmss-gpu",
        "location": "eastus",
        "sku": {"name": size, "capacity": 0},
        "properties": {},
    }


def test_parameters_and_variables_are_resolved_so_a_parameter_change_shows() -> None:
    (resource,) = desired_resources(one_deployment(lustre(), parameters={"size": {"value": 8}}))
    assert resource.name == "amlfs-t"
    assert resource.body["properties"]["storageCapacityTiB"] == 8
    assert (
        resource.id
        == "/subscriptions/{subscription}/resourceGroups/rg-t/providers/Microsoft.StorageCache/amlFilesystems/amlfs-t"
    )


def test_lustre_shrunk_or_a_new_sku_forces_replacement_with_data_loss() -> None:
    before = one_deployment(lustre(8))
    state = applied_state(preset("energy"), before)
    for after in (one_deployment(lustre(4)), one_deployment(lustre(8, sku="AMLFS-Durable-Premium-500"))):
        (change,) = offline_changeset(after, state).resources
        assert change.action is Action.REPLACE
        assert change.data_loss
        assert change.verdict.policy is Policy.REPLACE_DATA


def test_lustre_grown_is_not_allowed_with_the_expansion_job_to_use_instead() -> None:
    """Azure grows it in place through an expansion job (az amlfs expansion create), which hpclz does not make:
    never a replacement of a file system Azure could have grown."""
    state = applied_state(preset("energy"), one_deployment(lustre(4)))
    (change,) = offline_changeset(one_deployment(lustre(8)), state).resources
    assert (change.action, change.verdict.policy, change.data_loss) == (Action.MODIFY, Policy.NOT_ALLOWED, False)
    assert "az amlfs expansion create --new-storage-capacity 8" in change.verdict.action_needed
    assert "learn.microsoft.com/cli/azure/amlfs/expansion" in change.verdict.source


def test_lustre_maintenance_window_is_in_place() -> None:
    state = applied_state(preset("energy"), one_deployment(lustre(4)))
    moved = lustre(4)
    moved["properties"]["maintenanceWindow"] = {"dayOfWeek": "Monday"}
    (change,) = offline_changeset(one_deployment(moved), state).resources
    assert (change.action, change.verdict.policy) == (Action.MODIFY, Policy.IN_PLACE)


def test_scale_set_size_change_needs_a_drain() -> None:
    state = applied_state(preset("energy"), one_deployment(vmss("Standard_ND96isr_H100_v5")))
    (change,) = offline_changeset(one_deployment(vmss("Standard_ND96isr_H200_v5")), state).resources
    assert (change.action, change.verdict.policy) == (Action.MODIFY, Policy.DRAIN_PARTITION)
    assert "drain" in change.verdict.action_needed


def test_removed_and_added_resources() -> None:
    state = applied_state(preset("energy"), one_deployment(lustre(4)))
    changes = offline_changeset(one_deployment(vmss("Standard_HB176rs_v4")), state)
    assert {(r.name, r.action) for r in changes.resources} == {("amlfs-t", Action.DELETE), ("vmss-gpu", Action.CREATE)}
    deleted = next(r for r in changes.resources if r.action is Action.DELETE)
    assert deleted.data_loss and deleted.verdict.policy is Policy.REPLACE_DATA


def test_no_state_means_everything_is_created() -> None:
    changes = offline_changeset(build_plan(preset("energy")), None)
    assert changes.state is None
    assert changes.resources and all(r.action is Action.CREATE for r in changes.resources)
    assert changes.summary.add == len(changes.resources)


def test_named_lists_match_by_name_not_index() -> None:
    before = {"subnets": [{"name": "a", "p": 1}, {"name": "b", "p": 2}]}
    after = {"subnets": [{"name": "c", "p": 3}, {"name": "b", "p": 2}, {"name": "a", "p": 9}]}
    assert diff_values(before, after) == [
        ("subnets[a].p", Action.MODIFY, 1, 9),
        ("subnets[c]", Action.CREATE, None, {"name": "c", "p": 3}),
    ]
    assert diff_values({"x": [1, 2]}, {"x": [2, 1]}) == [("x", Action.MODIFY, [1, 2], [2, 1])]


def test_state_with_only_properties_and_guid_named_role_assignments() -> None:
    """The shape hpclz.deploy.records writes: nothing spurious, real edits still seen."""
    base = preset("energy")
    state = applied_state(base, properties_only=True)
    assert not offline_changeset(build_plan(base), state).changed_resources

    def grow(d: dict[str, Any]) -> None:
        d["network"]["vnet"]["address_space"].append("10.21.0.0/16")

    changed = offline_changeset(build_plan(edited(base, grow)), state).changed_resources
    assert [(r.name, r.action) for r in changed] == [("vnet-energy-prod-scus", Action.MODIFY)]


def test_a_deployment_applied_with_the_same_hash_is_unchanged_without_diffing() -> None:
    base = preset("energy")
    state = applied_state(base)
    for record in state.resources:
        record.properties = {"properties": {"recorded": "differently"}}  # would diff if compared
    assert not offline_changeset(build_plan(base), state).changed_resources


def test_a_deployment_moved_to_another_group_is_neither_applied_nor_matched_by_name() -> None:
    """The template hash leaves the group out, and a private DNS zone is named the same in every group
    (privatelink.blob.core.windows.net): a zone recorded in another group is a delete plus a create."""
    config = preset("energy")
    plan = build_plan(config)
    state = applied_state(config, plan)
    network = next(d for d in plan.deployments if d.component == "network")
    assert network.resource_group
    moved = state.model_copy(deep=True)
    moved.deployments[network.name].resource_group = "rg-elsewhere"
    for record in moved.resources:
        if record.deployment == network.name:
            record.id = re.sub(re.escape(network.resource_group), "rg-elsewhere", record.id, flags=re.I)
    changes = offline_changeset(plan, moved)
    zones = [r for r in changes.resources if r.type == "Microsoft.Network/privateDnsZones"]
    assert {r.action for r in zones} == {Action.CREATE, Action.DELETE}
    assert all("rg-elsewhere" in r.id for r in zones if r.action is Action.DELETE)
    assert offline_changeset(plan, state).has_changes is False  # unmoved, the same state is clean
