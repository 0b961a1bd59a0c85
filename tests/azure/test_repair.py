"""Restart, reimage and Guest Health Reports through the real azure-mgmt-compute and azure-core clients."""

from __future__ import annotations

import pytest

from hpclz.azure.clients import AzureClients
from hpclz.azure.repair import AzureRepair, HealthReport, Machine
from hpclz.errors import HpclzError
from tests.support.arm_standin import ArmStandIn

RG = "rg-cluster"


@pytest.fixture
def repair(arm: ArmStandIn) -> AzureRepair:
    return AzureRepair(AzureClients(arm.subscription_id))


def _report(machine: Machine, **kw: str) -> HealthReport:
    values = {
        "name": "hpclz-gpu1-0001",
        "category": "Resource.Hpc.Unhealthy.XID79FallenOffBus",
        "description": "Xid 79 (GPU has fallen off the bus) on GPU 2 (00000003:00:00.0)",
        "started": "2026-11-27T00:00:00+00:00",
        "vm_unique_id": "",
    }
    values.update(kw)
    return HealthReport(machine=machine, **values)  # type: ignore[arg-type]


def test_restart_and_reimage_a_vm_follow_the_lro_to_the_end(arm: ArmStandIn, repair: AzureRepair) -> None:
    vm = Machine(arm.compute.add(RG, "gpu1", {"ClusterName": "c1", "Name": "gpu1"}))
    repair.restart(vm)
    repair.reimage(vm)
    assert arm.repairs.log.of(vm.resource_id) == ["restart", "reimage"]
    assert [(r.method, r.status) for r in arm.log if r.path.lower().endswith(("/restart", "/reimage"))] == [
        ("POST", 202),
        ("POST", 202),
    ]


def test_restart_and_reimage_a_scale_set_instance(arm: ArmStandIn, repair: AzureRepair) -> None:
    rid = arm.repairs.add_scale_set_instance(RG, "hpc-vmss", "3", {"ClusterName": "c1", "Name": "gpu3"})
    machine = Machine(rid)
    assert machine.scale_set == ("hpc-vmss", "3")
    repair.reimage(machine)
    repair.restart(machine)
    assert arm.repairs.log.of(rid) == ["reimage", "restart"]


def test_a_missing_machine_is_one_line_naming_it(arm: ArmStandIn, repair: AzureRepair) -> None:
    ghost = Machine(
        f"/subscriptions/{arm.subscription_id}/resourceGroups/{RG}/providers/Microsoft.Compute/virtualMachines/nope"
    )
    with pytest.raises(HpclzError, match=r"restart .*virtualMachines/nope: .*not found"):
        repair.restart(ghost)


def test_health_report_has_the_documented_shape_and_refiling_it_files_one(arm: ArmStandIn, repair: AzureRepair) -> None:
    vm = Machine(arm.compute.add(RG, "gpu1", {"ClusterName": "c1", "Name": "gpu1"}))
    vm_id = repair.vm_unique_id(vm)
    assert vm_id
    first = repair.report(_report(vm, vm_unique_id=vm_id, physical_host="GGBB90904476"))
    again = repair.report(_report(vm, vm_unique_id=vm_id, physical_host="GGBB90904476"))
    assert first == again and first
    assert arm.repairs.log.puts == ["hpclz-gpu1-0001", "hpclz-gpu1-0001"]
    [stored] = arm.repairs.log.impacts.values()
    props = stored["properties"]
    assert props["impactCategory"] == "Resource.Hpc.Unhealthy.XID79FallenOffBus"
    assert props["impactedResourceId"] == vm.resource_id
    assert props["additionalProperties"] == {"PhysicalHostName": "GGBB90904476", "VmUniqueId": vm_id}
    impact_puts = [r for r in arm.log if "/workloadimpacts/" in r.path.lower()]
    assert [r.status for r in impact_puts] == [201, 200]


def test_a_report_naming_no_machine_is_refused_before_any_request(arm: ArmStandIn, repair: AzureRepair) -> None:
    vm = Machine(arm.compute.add(RG, "gpu1", {}))
    with pytest.raises(HpclzError, match="no PhysicalHostName or VmUniqueId"):
        repair.report(_report(vm))
    assert arm.repairs.log.puts == []


def test_an_unknown_category_is_refused_as_azure_would(arm: ArmStandIn, repair: AzureRepair) -> None:
    vm = Machine(arm.compute.add(RG, "gpu1", {}))
    with pytest.raises(HpclzError, match=r"file health report .*not supported"):
        repair.report(_report(vm, category="Resource.Hpc.Unhealthy.Xid79", vm_unique_id="1111"))
