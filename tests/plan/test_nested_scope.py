"""Where a nested deployment's resources land, as ARM places them (MicrosoftDocs/azure-docs articles/
azure-resource-manager/templates/deploy-to-resource-group.md): with `resourceGroup`, in that group; with only
`subscriptionId`, at subscription scope ("Scope to subscription"); with neither, in the parent's group. CycleCloud's
Reader on the subscription (render.roles.cyclecloud_subscription_assignments) is such a subscription-scope run
nested in the compute group's deployment: the plan must expect it on the subscription, where ARM puts it."""

from __future__ import annotations

from hpclz.plan.resources import deployment_resources
from hpclz.render.build import build_plan
from tests.plan.support import SUBSCRIPTION, preset


def test_a_nested_run_with_only_a_subscription_id_places_its_resources_on_the_subscription() -> None:
    plan = build_plan(preset("ai-training"))
    compute = next(d for d in plan.deployments if d.component == "compute")
    assignments = [
        r for r in deployment_resources(compute, SUBSCRIPTION) if r.type == "Microsoft.Authorization/roleAssignments"
    ]
    reader = [r for r in assignments if "(CycleCloud SKU and quota reads)" in str(r.body)]
    assert len(reader) == 1
    assert reader[0].id.startswith(f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleAssignments/")
    # Its sibling nested into the network group (resourceGroup given) stays in that group.
    network = [r for r in assignments if "/resourceGroups/rg-aitrain-network-prod-eus2/" in r.id]
    assert network
