"""What destroy takes in before deleting (hpclz.deploy.in_flight) and what a kept MySQL server keeps with it
(hpclz.deploy.destroy.kept_set), on hand-made state; the kill -9 races themselves are in test_resume."""

from __future__ import annotations

from typing import Any

from hpclz.deploy.destroy import kept_set
from hpclz.deploy.in_flight import RECORDED_RUNNING, UNRECORDED, why_in_flight
from hpclz.render.model import MANAGED_TAG
from hpclz.state.model import DeploymentRecord, DeploymentStatus, ResourceRecord, StateDocument

NAME = "hpclz-energy-prod-flowlogs"
SUB = "/subscriptions/00000000-0000-0000-0000-00000000c0de"


def _remote(state: str, correlation: str, tags: dict[str, str] | None = None) -> dict[str, Any]:
    """The parts of a Deployments - Get answer (DeploymentExtended) that destroy reads."""
    return {
        "id": f"{SUB}/resourceGroups/rg/providers/Microsoft.Resources/deployments/{NAME}",
        "tags": {MANAGED_TAG: "true"} if tags is None else tags,
        "properties": {"provisioningState": state, "correlationId": correlation},
    }


def _doc(status: DeploymentStatus | None = None, correlation: str | None = None, **extra: Any) -> StateDocument:
    records = {}
    if status is not None:
        records[NAME] = DeploymentRecord(
            name=NAME,
            component="flowlogs",
            scope="resourceGroup",
            template_hash="h",
            status=status,
            correlation_id=correlation,
        )
    return StateDocument(landing_zone="energy", environment="prod", deployments=records, **extra)


def test_a_run_recorded_as_running_is_taken_in_whatever_arm_says_now() -> None:
    assert why_in_flight(_doc(DeploymentStatus.RUNNING, "c1"), NAME, _remote("Running", "c1")) == RECORDED_RUNNING
    assert why_in_flight(_doc(DeploymentStatus.RUNNING, "c1"), NAME, _remote("Succeeded", "c1")) == RECORDED_RUNNING


def test_a_run_state_never_saw_is_taken_in() -> None:
    assert why_in_flight(_doc(), NAME, _remote("Succeeded", "c2")) == UNRECORDED
    # state recorded an earlier run of the same name finishing; ARM now holds a newer one
    assert why_in_flight(_doc(DeploymentStatus.SUCCEEDED, "c1"), NAME, _remote("Running", "c2")) == UNRECORDED


def test_a_recorded_finished_run_a_destroyed_one_an_absent_one_or_a_foreign_one_is_not() -> None:
    assert why_in_flight(_doc(DeploymentStatus.SUCCEEDED, "c1"), NAME, _remote("Succeeded", "c1")) is None
    assert why_in_flight(_doc(destroyed_runs={NAME: "c1"}), NAME, _remote("Succeeded", "c1")) is None
    assert why_in_flight(_doc(), NAME, None) is None
    assert why_in_flight(_doc(), NAME, _remote("Running", "c3", tags={})) is None


def _record(rtype: str, path: str, properties: dict[str, Any] | None = None, data: bool = False) -> ResourceRecord:
    rid = f"{SUB}/resourceGroups/rg-net/providers/{path}"
    return ResourceRecord(
        id=rid,
        type=rtype,
        name=rid.rsplit("/", 1)[-1],
        api_version="2024-06-01",
        deployment="d",
        data_bearing=data,
        properties=properties or {},
    )


def _zone_records(vnet_kept: bool) -> tuple[list[ResourceRecord], ResourceRecord]:
    """As the energy preset records them: the server names its subnet and zone; the link names the VNet."""
    zone_name = "mysql-energy.private.mysql.database.azure.com"
    vnet = _record("Microsoft.Network/virtualNetworks", "Microsoft.Network/virtualNetworks/vnet-energy")
    subnet = _record(
        "Microsoft.Network/virtualNetworks/subnets", "Microsoft.Network/virtualNetworks/vnet-energy/subnets/db"
    )
    zone = _record("Microsoft.Network/privateDnsZones", f"Microsoft.Network/privateDnsZones/{zone_name}")
    link = _record(
        "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
        f"Microsoft.Network/privateDnsZones/{zone_name}/virtualNetworkLinks/vnet-energy",
        {"properties": {"virtualNetwork": {"id": vnet.id}}},
    )
    network = {"privateDnsZoneResourceId": zone.id}
    if vnet_kept:
        network["delegatedSubnetResourceId"] = subnet.id
    server = _record(
        "Microsoft.DBforMySQL/flexibleServers",
        "Microsoft.DBforMySQL/flexibleServers/mysql-energy",
        {"properties": {"network": network}},
        data=True,
    )
    return [vnet, subnet, zone, link, server], link


def test_a_kept_servers_zone_keeps_its_link_to_the_kept_vnet() -> None:
    records, link = _zone_records(vnet_kept=True)
    kept = kept_set(records, include_data=False)
    assert kept[link.id.lower()] == "resolves kept mysql-energy.private.mysql.database.azure.com in kept vnet-energy"


def test_the_link_goes_with_include_data_or_when_its_vnet_goes() -> None:
    records, link = _zone_records(vnet_kept=True)
    assert kept_set(records, include_data=True) == {}
    records, link = _zone_records(vnet_kept=False)
    kept = kept_set(records, include_data=False)
    assert link.id.lower() not in kept and records[2].id.lower() in kept  # the zone stays, the VNet goes
