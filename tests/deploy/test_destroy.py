"""Destroyer against the ARM stand-in, on a hand-made state: what each recorded resource comes to."""

from __future__ import annotations

from hpclz.azure.arm import Arm
from hpclz.azure.clients import AzureClients
from hpclz.deploy.destroy import Action, Destroyer
from hpclz.render.model import MANAGED_TAG
from hpclz.state.model import DeploymentRecord, DeploymentStatus, ResourceRecord, StateDocument
from tests.support.arm_standin import ArmStandIn

VNET = "Microsoft.Network/virtualNetworks"


def _resource(arm: ArmStandIn, group: str, name: str, deployment: str) -> ResourceRecord:
    rid = f"/subscriptions/{arm.subscription_id}/resourceGroups/{group}/providers/{VNET}/{name}"
    arm.world.resources[rid.lower()] = {"id": rid, "name": name, "type": VNET, "tags": {MANAGED_TAG: "true"}}
    return ResourceRecord(id=rid, type=VNET, name=name, api_version="2023-09-01", deployment=deployment)


def test_a_deployment_whose_group_goes_whole_still_deletes_what_it_made_in_another_group(arm: ArmStandIn) -> None:
    arm.world.put_group("rg-net", "eastus", {MANAGED_TAG: "true"})
    arm.world.put_group("rg-hub", "eastus", {})  # not hpclz's: never deleted whole
    group = ResourceRecord(
        id=f"/subscriptions/{arm.subscription_id}/resourceGroups/rg-net",
        type="Microsoft.Resources/resourceGroups",
        name="rg-net",
        api_version="2022-09-01",
        deployment="lz-org",
    )
    inside = _resource(arm, "rg-net", "vnet-spoke", "lz-net")
    elsewhere = _resource(arm, "rg-hub", "vnet-extra", "lz-net")
    doc = StateDocument(
        landing_zone="lz",
        environment="dev",
        deployments={
            name: DeploymentRecord(
                name=name, component=name, scope=scope, resource_group=rg, template_hash="h", status=status
            )
            for name, scope, rg, status in [
                ("lz-org", "subscription", None, DeploymentStatus.SUCCEEDED),
                ("lz-net", "resourceGroup", "rg-net", DeploymentStatus.SUCCEEDED),
            ]
        },
        resources=[group, inside, elsewhere],
    )

    destroyer = Destroyer(Arm(AzureClients(arm.subscription_id)), doc, ["lz-net", "lz-org"])
    remaining = destroyer.run(include_data=False)

    assert remaining.resources == []
    assert [(o.id, o.action) for o in destroyer.outcomes] == [
        (group.id, Action.DELETED),
        (elsewhere.id, Action.DELETED),
    ]
    assert arm.world.group("rg-net") is None and arm.world.group("rg-hub") is not None
    assert elsewhere.id.lower() not in arm.world.resources
