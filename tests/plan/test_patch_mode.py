"""A zone deployed while the CycleCloud server was under platform patching (patchMode AutomaticByPlatform and an
InGuestPatch assignment), planned with today's render: the patch mode changes in place, the assignment goes, the
server is not replaced. Changing the mode is a VM model update ("To disable automatic VM guest patching on a Linux
VM, change the patch mode to ImageDefault", learn.microsoft.com/azure/virtual-machines/automatic-vm-guest-patching)."""

from __future__ import annotations

import copy
from typing import Any

from hpclz.plan.changeset import Action, Policy
from hpclz.plan.offline import offline_changeset
from hpclz.render.build import build_plan
from hpclz.render.model import DeploymentPlan
from tests.plan.support import applied_state, preset

PLATFORM = {
    "patchMode": "AutomaticByPlatform",
    "assessmentMode": "AutomaticByPlatform",
    "automaticByPlatformSettings": {"bypassPlatformSafetyChecksOnUserSchedule": True},
}


def _as_rendered_before(plan: DeploymentPlan) -> DeploymentPlan:
    """The same zone as hpclz rendered it before: the server under AutomaticByPlatform and assigned."""
    old = copy.deepcopy(plan)
    compute = next(d for d in old.deployments if d.component == "compute")
    (vm,) = [r for r in compute.template["resources"] if r["type"] == "Microsoft.Compute/virtualMachines"]
    vm["properties"]["osProfile"]["linuxConfiguration"]["patchSettings"] = copy.deepcopy(PLATFORM)
    maintenance = next(d for d in old.deployments if d.component == "maintenance")
    (configuration,) = maintenance.template["resources"]
    mc = configuration["name"]
    assignment: dict[str, Any] = {
        "type": "Microsoft.Maintenance/configurationAssignments",
        "apiVersion": configuration["apiVersion"],
        "name": mc,
        "location": configuration["location"],
        "scope": f"Microsoft.Compute/virtualMachines/{vm['name']}",
        "dependsOn": [f"[resourceId('Microsoft.Maintenance/maintenanceConfigurations', '{mc}')]"],
        "properties": {
            "maintenanceConfigurationId": f"[resourceId('Microsoft.Maintenance/maintenanceConfigurations', '{mc}')]",
            "resourceId": f"[resourceId('Microsoft.Compute/virtualMachines', '{vm['name']}')]",
        },
    }
    maintenance.template["resources"].append(assignment)
    return old


def test_leaving_platform_patching_updates_the_server_in_place_and_drops_its_assignment() -> None:
    config = preset("ai-training")
    plan = build_plan(config)
    state = applied_state(config, _as_rendered_before(plan))
    changes = offline_changeset(plan, state)
    by_type: dict[str, list[Any]] = {}
    for change in changes.resources:
        if change.action is Action.NO_CHANGE:
            continue
        by_type.setdefault(change.type, []).append(change)
    (server,) = by_type["Microsoft.Compute/virtualMachines"]
    assert server.action is Action.MODIFY and server.verdict.policy is Policy.IN_PLACE
    assert "patch orchestration mode" in server.verdict.reason
    (assignment,) = by_type["Microsoft.Maintenance/configurationAssignments"]
    assert assignment.action is Action.DELETE
    assert assignment.id.endswith(
        f"/virtualMachines/{server.name}/providers/Microsoft.Maintenance/configurationAssignments/{assignment.name}"
    )
