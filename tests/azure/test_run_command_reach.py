"""A managed Run Command's output blobs cross two networks: the VM's agent writes them from the VM (its NIC's subnet,
its own outbound address) and hpclz reads them from the workstation (learn.microsoft.com/azure/virtual-machines/
linux/run-command-managed: the agent uploads stdout and stderr to outputBlobUri / errorBlobUri). An account whose
firewall lets in only the workstation's address gets nothing from the VM; a virtual network rule for the VM's subnet
(with the subnet's Microsoft.Storage service endpoint) lets the agent in. hpclz.azure.run_command drives it through
the real SDK clients; the stand-in's network rules are tests/support/arm_standin/reach.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpclz.azure.clients import AzureClients
from hpclz.azure.run_command import OutputBlobs, run_inline, run_script
from hpclz.errors import HpclzError
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.data_planes import BlobFront, VmBlobRoutes
from tests.support.arm_standin.faults import Fault
from tests.support.arm_standin.reach import WORKSTATION
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, shared_azurite

SUB = "/subscriptions/00000000-0000-0000-0000-00000000c0de"
RG = "rg-cluster"
NET = f"{SUB}/resourceGroups/rg-net/providers/Microsoft.Network"
SUBNET = f"{NET}/virtualNetworks/vnet-lz/subnets/compute"
STATE = f"{SUB}/resourceGroups/rg-ops/providers/Microsoft.Storage/storageAccounts/stopsstate"


def _put(arm: ArmStandIn, rid: str, rtype: str, properties: dict[str, Any]) -> None:
    arm.world.resources[rid.lower()] = {
        "id": rid,
        "name": rid.rsplit("/", 1)[-1],
        "type": rtype,
        "properties": properties,
    }


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin


def _scheduler(arm: ArmStandIn) -> str:
    """A VM whose NIC sits in the zone's compute subnet."""
    vm_id = arm.compute.add(RG, "scheduler", {})
    nic = f"{SUB}/resourceGroups/{RG}/providers/Microsoft.Network/networkInterfaces/scheduler-nic"
    _put(
        arm,
        nic,
        "Microsoft.Network/networkInterfaces",
        {"ipConfigurations": [{"properties": {"subnet": {"id": SUBNET}}}]},
    )
    arm.world.resources[vm_id.lower()]["properties"]["networkProfile"] = {"networkInterfaces": [{"id": nic}]}
    return vm_id


def _state_account(arm: ArmStandIn, vnet_rules: list[dict[str, str]]) -> None:
    """The team's state account, open to the workstation's address only (loopback, as the stand-in sees it)."""
    acls = {
        "defaultAction": "Deny",
        "bypass": "None",
        "ipRules": [{"value": "127.0.0.1", "action": "Allow"}],
        "virtualNetworkRules": vnet_rules,
    }
    _put(arm, STATE, "Microsoft.Storage/storageAccounts", {"publicNetworkAccess": "Enabled", "networkAcls": acls})


def _run(arm: ArmStandIn, vm_id: str) -> str:
    front = BlobFront(arm, STATE, shared_azurite().account_url, WORKSTATION).start()
    routes = VmBlobRoutes(arm, [front])
    arm.compute.blob_route = routes.route
    try:
        blobs = OutputBlobs(front.account_url, "reports", front.connection_string(ACCOUNT, ACCOUNT_KEY), None)
        clients = AzureClients(arm.subscription_id)
        outcome = run_script(clients, vm_id, "echo hello from the vm", blobs, env={}, timeout_s=60, progress=print)
    finally:
        routes.stop()
        front.stop()
    assert outcome.state == "Succeeded" and outcome.exit_code == 0
    assert front.refused == []  # hpclz's own calls, from the workstation, all got in
    return outcome.stdout


def test_an_account_open_to_the_workstation_only_gets_no_output_from_the_vm(arm: ArmStandIn) -> None:
    _state_account(arm, vnet_rules=[])
    assert _run(arm, _scheduler(arm)) == ""
    assert [code for _uri, code in arm.compute.unwritten] == ["AuthorizationFailure"]


def test_a_virtual_network_rule_for_the_vms_subnet_lets_the_agent_write(arm: ArmStandIn) -> None:
    _state_account(arm, vnet_rules=[{"id": SUBNET, "action": "Allow"}])
    endpoint = {"addressPrefix": "10.0.1.0/24", "serviceEndpoints": [{"service": "Microsoft.Storage"}]}
    _put(arm, SUBNET, "Microsoft.Network/virtualNetworks/subnets", endpoint)
    assert _run(arm, _scheduler(arm)) == "hello from the vm\n"
    assert arm.compute.unwritten == []


def _runs_of(arm: ArmStandIn, method: str) -> list[int]:
    return [r.status for r in arm.log if r.method == method and "/runCommands/" in r.path]


def test_a_refused_create_is_still_cleaned_up_and_its_own_error_is_the_one_reported(arm: ArmStandIn) -> None:
    """A PUT that fails may still have left the run command behind, so the delete is tried after it too; the line
    the operator reads is the create's refusal, not the delete's."""
    vm_id = _scheduler(arm)
    arm.faults.add(Fault("error", method="PUT", path="/runCommands/", status=409, code="Conflict", times=None))
    arm.faults.add(Fault("error", method="DELETE", path="/runCommands/", status=500, times=None))
    clients = AzureClients(arm.subscription_id)
    with pytest.raises(HpclzError) as refused:
        run_inline(clients, vm_id, "hpclz-probe", "true", timeout_s=60, progress=print)
    assert refused.value.message.startswith("start the run command hpclz-probe on scheduler"), refused.value.message
    assert _runs_of(arm, "PUT") and set(_runs_of(arm, "PUT")) == {409}
    assert _runs_of(arm, "DELETE") and set(_runs_of(arm, "DELETE")) == {500}


def test_a_run_that_ends_deletes_its_command(arm: ArmStandIn) -> None:
    vm_id = _scheduler(arm)
    clients = AzureClients(arm.subscription_id)
    outcome = run_inline(clients, vm_id, "hpclz-probe", "echo hi", timeout_s=60, progress=print)
    assert outcome.state == "Succeeded"
    assert set(_runs_of(arm, "DELETE")) <= {200, 202, 204} and _runs_of(arm, "DELETE")
    assert not [rid for rid in arm.world.resources if "/runcommands/" in rid]
