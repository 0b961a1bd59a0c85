"""Destroy deletes only what the zone can prove it owns (hpclz.deploy.ownership): records added to state by hand
(another team's subnet, a role assignment hpclz never made, another zone's group, a resource in another
subscription) are left alone with the reason, and another subscription gets no request at all."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hpclz.azure.arm import Arm
from hpclz.azure.clients import AzureClients
from hpclz.deploy.destroy import Action, Destroyer
from hpclz.deploy.ownership import parent_of, tag_refusal
from hpclz.render.model import ENVIRONMENT_TAG, MANAGED_TAG, ZONE_TAG
from hpclz.state.model import ResourceRecord, StateDocument
from tests.deploy.conftest import state_of
from tests.support.arm_standin import ArmStandIn

OURS = {MANAGED_TAG: "true", ZONE_TAG: "lz", ENVIRONMENT_TAG: "dev"}
VNET = "Microsoft.Network/virtualNetworks"
ROLE = "Microsoft.Authorization/roleAssignments"
OTHER_SUB = "11111111-2222-3333-4444-555555555555"


def _record(rid: str, rtype: str, deployment: str = "lz-net", version: str = "2023-09-01") -> ResourceRecord:
    return ResourceRecord(id=rid, type=rtype, name=rid.rsplit("/", 1)[-1], api_version=version, deployment=deployment)


def _put(arm: ArmStandIn, rid: str, rtype: str, tags: dict[str, str] | None) -> None:
    body = {"id": rid, "name": rid.rsplit("/", 1)[-1], "type": rtype}
    arm.world.resources[rid.lower()] = {**body, "tags": tags} if tags is not None else body


def _destroy(arm: ArmStandIn, *records: ResourceRecord) -> tuple[Destroyer, StateDocument]:
    doc = StateDocument(landing_zone="lz", environment="dev", resources=list(records))
    destroyer = Destroyer(Arm(AzureClients(arm.subscription_id)), doc, ["lz-net"])
    return destroyer, destroyer.run(include_data=True)


def test_only_resources_tagged_with_this_zone_are_deleted(arm: ArmStandIn) -> None:
    sub = f"/subscriptions/{arm.subscription_id}"
    arm.world.put_group("rg-lz-net", "eastus", OURS)
    arm.world.put_group("rg-platform", "eastus", {"owner": "platform"})
    ours = f"{sub}/resourceGroups/rg-lz-net/providers/{VNET}/vnet-lz"
    theirs = f"{sub}/resourceGroups/rg-platform/providers/{VNET}/vnet-platform"
    other_zone = f"{sub}/resourceGroups/rg-platform/providers/{VNET}/vnet-energy"
    _put(arm, ours, VNET, OURS)
    _put(arm, theirs, VNET, {"owner": "platform"})
    _put(arm, other_zone, VNET, {MANAGED_TAG: "true", ZONE_TAG: "energy"})

    destroyer, remaining = _destroy(arm, _record(ours, VNET), _record(theirs, VNET), _record(other_zone, VNET))

    verdicts = {o.id: (o.action, o.reason) for o in destroyer.outcomes}
    assert verdicts[ours] == (Action.DELETED, "")
    assert verdicts[theirs] == (Action.LEFT, f"not tagged {MANAGED_TAG}=true")
    assert verdicts[other_zone] == (Action.LEFT, f"tagged {ZONE_TAG}=energy, not this zone's lz")
    assert theirs.lower() in arm.world.resources and other_zone.lower() in arm.world.resources
    assert {r.id for r in remaining.resources} == {theirs, other_zone}


def test_another_zones_resource_group_is_never_deleted_whole(arm: ArmStandIn) -> None:
    arm.world.put_group("rg-energy-net", "eastus", {MANAGED_TAG: "true", ZONE_TAG: "energy"})
    group = _record(
        f"/subscriptions/{arm.subscription_id}/resourceGroups/rg-energy-net", "Microsoft.Resources/resourceGroups"
    )

    destroyer, _ = _destroy(arm, group)

    assert [(o.action, o.reason) for o in destroyer.outcomes] == [
        (Action.LEFT, f"tagged {ZONE_TAG}=energy, not this zone's lz")
    ]
    assert arm.world.group("rg-energy-net") is not None


def test_another_environment_of_the_same_zone_is_not_this_zone(arm: ArmStandIn) -> None:
    rid = f"/subscriptions/{arm.subscription_id}/resourceGroups/rg-lz-prod/providers/{VNET}/vnet-lz"
    _put(arm, rid, VNET, {**OURS, ENVIRONMENT_TAG: "prod"})

    destroyer, _ = _destroy(arm, _record(rid, VNET))

    assert [(o.action, o.reason) for o in destroyer.outcomes] == [
        (Action.LEFT, f"tagged {ENVIRONMENT_TAG}=prod, not this zone's dev")
    ]


def test_a_record_in_another_subscription_gets_no_request(arm: ArmStandIn) -> None:
    group = _record(f"/subscriptions/{OTHER_SUB}/resourceGroups/rg-lz-net", "Microsoft.Resources/resourceGroups")
    vnet = _record(f"/subscriptions/{OTHER_SUB}/resourceGroups/rg-lz-net/providers/{VNET}/vnet-lz", VNET)
    arm.world.put_group("rg-lz-net", "eastus", OURS)  # same name in the zone's subscription: not what was recorded

    destroyer, remaining = _destroy(arm, group, vnet)

    assert {o.action for o in destroyer.outcomes} == {Action.LEFT}
    assert all("hpclz sends no request there" in o.reason for o in destroyer.outcomes)
    assert not [r for r in arm.log if OTHER_SUB in r.path]
    assert arm.world.group("rg-lz-net") is not None
    assert len(remaining.resources) == 2


def test_an_untagged_child_is_owned_through_its_parent(arm: ArmStandIn) -> None:
    sub = f"/subscriptions/{arm.subscription_id}"
    ours = f"{sub}/resourceGroups/rg-lz-net/providers/{VNET}/vnet-lz"
    theirs = f"{sub}/resourceGroups/rg-platform/providers/{VNET}/vnet-platform"
    _put(arm, ours, VNET, OURS)
    _put(arm, theirs, VNET, {"owner": "platform"})
    subnet_type = f"{VNET}/subnets"
    _put(arm, f"{ours}/subnets/compute", subnet_type, None)
    _put(arm, f"{theirs}/subnets/apps", subnet_type, None)

    destroyer, _ = _destroy(
        arm, _record(f"{ours}/subnets/compute", subnet_type), _record(f"{theirs}/subnets/apps", subnet_type)
    )

    verdicts = {o.id.rsplit("/", 1)[-1]: (o.action, o.reason) for o in destroyer.outcomes}
    assert verdicts["compute"] == (Action.DELETED, "")
    assert verdicts["apps"][0] is Action.LEFT
    assert "its scope vnet-platform is not this zone's" in verdicts["apps"][1]
    assert f"{theirs}/subnets/apps".lower() in arm.world.resources


def test_a_role_assignment_no_run_of_the_zone_made_is_left_alone(arm: ArmStandIn) -> None:
    """An assignment at subscription scope has no tags and no owned parent: only a run of the zone's deployments
    listing it proves it; none does here."""
    rid = f"/subscriptions/{arm.subscription_id}/providers/{ROLE}/5b1ee1a1-0000-4000-8000-000000000001"
    _put(arm, rid, ROLE, None)

    destroyer, _ = _destroy(arm, _record(rid, ROLE, version="2022-04-01"))

    ((action, reason),) = [(o.action, o.reason) for o in destroyer.outcomes]
    assert action is Action.LEFT
    assert "no run of the zone's deployments lists it" in reason
    assert rid.lower() in arm.world.resources


def test_parents_and_tags() -> None:
    sub = "/subscriptions/s/resourceGroups/g/providers"
    assert parent_of(f"{sub}/{VNET}/v/subnets/a") == f"{sub}/{VNET}/v"
    assert parent_of(f"{sub}/{VNET}/v") == "/subscriptions/s/resourceGroups/g"
    assert parent_of(f"{sub}/Microsoft.Compute/virtualMachines/vm/providers/{ROLE}/x") == (
        f"{sub}/Microsoft.Compute/virtualMachines/vm"
    )
    assert parent_of(f"/subscriptions/s/providers/{ROLE}/x") == "/subscriptions/s"
    assert tag_refusal(OURS, "lz", "dev") is None
    assert tag_refusal({MANAGED_TAG: "true"}, "lz", "dev") == f"not tagged {ZONE_TAG}=lz"


def _forge(config: Path, records: list[dict[str, str]]) -> None:
    """Add records to the state file by hand, as someone with write access to it could."""
    (path,) = (config.parent / ".hpclz").rglob("state.json")
    doc = json.loads(path.read_text())
    doc["resources"] += [
        {
            "id": r["id"],
            "type": r["type"],
            "name": r["id"].rsplit("/", 1)[-1],
            "api_version": r["api"],
            "deployment": r["deployment"],
        }
        for r in records
    ]
    path.write_text(json.dumps(doc))


@pytest.mark.slow
def test_plan_destroy_and_destroy_never_name_records_added_to_state(
    arm: ArmStandIn, energy: Path, run_cli: Callable[..., Any], predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    sub = f"/subscriptions/{arm.subscription_id}"
    arm.world.put_group("rg-platform", "southcentralus", {"owner": "platform"})
    arm.world.put_group("rg-seismic-net", "southcentralus", {MANAGED_TAG: "true", ZONE_TAG: "seismic"})
    theirs = f"{sub}/resourceGroups/rg-platform/providers/{VNET}/vnet-platform"
    _put(arm, theirs, VNET, {"owner": "platform"})
    _put(arm, f"{theirs}/subnets/apps", f"{VNET}/subnets", None)
    role = f"{sub}/providers/{ROLE}/5b1ee1a1-0000-4000-8000-000000000002"
    _put(arm, role, ROLE, None)
    deployment = next(iter(state_of(energy)["deployments"]))
    forged = [
        {"id": f"{theirs}/subnets/apps", "type": f"{VNET}/subnets", "api": "2023-09-01"},
        {"id": role, "type": ROLE, "api": "2022-04-01"},
        {
            "id": f"{sub}/resourceGroups/rg-seismic-net",
            "type": "Microsoft.Resources/resourceGroups",
            "api": "2022-09-01",
        },
        {
            "id": f"/subscriptions/{OTHER_SUB}/resourceGroups/rg-x",
            "type": "Microsoft.Resources/resourceGroups",
            "api": "2022-09-01",
        },
    ]
    _forge(energy, [{**r, "deployment": deployment} for r in forged])
    owned = len(state_of(energy)["resources"]) - len(forged)

    shown = run_cli("plan", str(energy), "--destroy", "--include-data", "-o", "json")
    body = json.loads(shown.stdout)["result"]
    assert body["summary"]["destroy"] == owned, body[
        "left_alone"
    ]  # every resource the deploy made proves its ownership
    assert {line.split(": ", 1)[0] for line in body["left_alone"]} == {r["id"] for r in forged}
    recorded = state_of(energy)
    assert body["state"] == {"lineage": recorded["lineage"], "serial": recorded["serial"]}
    people = run_cli("plan", str(energy), "--destroy", "--include-data")
    assert "left alone, not proved this zone's" in people.stdout
    # The header names the state the deletes were read from, not "no state: everything is new".
    assert f"against state serial {recorded['serial']}" in people.stdout and "everything is new" not in people.stdout

    destroyed = run_cli("destroy", str(energy), "--yes", "--include-data", "-o", "json")
    outcomes = {o["id"]: o for o in json.loads(destroyed.stdout)["result"]["outcomes"]}
    assert {i for i, o in outcomes.items() if o["action"] == "left alone"} == {r["id"] for r in forged}
    assert f"{theirs}/subnets/apps".lower() in arm.world.resources and role.lower() in arm.world.resources
    assert arm.world.group("rg-seismic-net") is not None
    assert not [r for r in arm.log if OTHER_SUB in r.path]
    assert {r["id"] for r in state_of(energy)["resources"]} == {r["id"] for r in forged}


MONITORING = "rg-energy-monitoring-prod-scus"
WORKSPACE = "Microsoft.OperationalInsights/workspaces/log-energy-prod-scus"


@pytest.mark.slow
def test_a_resource_hpclz_did_not_create_is_refused_until_adopted(
    arm: ArmStandIn, energy: Path, run_cli: Callable[..., Any]
) -> None:
    """A platform team's workspace (retention 730 days) under the name hpclz gives its own: a deploy would update it
    in place (ARM's incremental mode) and a destroy would delete it. Deploy refuses; `state adopt` takes it on
    purpose, and plan then shows what deploy changes on it."""
    platform = {"owner": "platform"}
    arm.world.put_group(MONITORING, "southcentralus", platform)
    rid = f"/subscriptions/{arm.subscription_id}/resourceGroups/{MONITORING}/providers/{WORKSPACE}"
    arm.world.resources[rid.lower()] = {
        "id": rid,
        "name": "log-energy-prod-scus",
        "type": "Microsoft.OperationalInsights/workspaces",
        "location": "southcentralus",
        "tags": platform,
        "properties": {"sku": {"name": "PerGB2018"}, "retentionInDays": 730},
    }

    refused = run_cli("deploy", str(energy), "--yes")
    assert refused.exit_code == 1
    assert "refusing to take over a resource this zone did not create" in refused.stdout + refused.stderr
    assert (
        f"resourceGroups/{MONITORING}: exists and is not tagged {MANAGED_TAG}=true" in refused.stdout + refused.stderr
    )
    assert not [w for w in arm.writes() if w.method in ("PUT", "PATCH", "DELETE")]  # only preflight's checks ran
    assert arm.world.resources[rid.lower()]["properties"]["retentionInDays"] == 730

    for address in (f"/subscriptions/{arm.subscription_id}/resourceGroups/{MONITORING}", WORKSPACE):
        adopted = run_cli("state", "adopt", str(energy), address)
        assert adopted.exit_code == 0, adopted.stdout + adopted.stderr
    shown = run_cli("plan", str(energy), "--refresh=false")
    assert "properties.retentionInDays: 730 -> 90" in shown.stdout, shown.stdout
    assert run_cli("state", "adopt", str(energy), "Microsoft.Nope/things/none").exit_code == 64

    applied = run_cli("deploy", str(energy), "--yes")
    assert applied.exit_code == 0, applied.stdout + applied.stderr
    assert arm.world.resources[rid.lower()]["properties"]["retentionInDays"] == 90
