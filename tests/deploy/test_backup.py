"""Azure Backup on the stand-in: deploy protects the CycleCloud server; a plain destroy keeps the
vault, its policy and the protected item (the backups) and deletes the VM; --include-data stops protection, and
Azure keeps the backups soft-deleted and the vault until they expire (tests/deploy/test_cycle.py plays that out)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunCli
from tests.support.arm_standin import ArmStandIn

VAULT = "Microsoft.RecoveryServices/vaults"
ITEM = "Microsoft.RecoveryServices/vaults/backupFabrics/protectionContainers/protectedItems"


def _of(arm: ArmStandIn, type_: str) -> list[dict[str, Any]]:
    return [r for r in arm.world.resources.values() if r["type"] == type_]


def test_deploy_protects_the_cyclecloud_server(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    deployed = run_cli("deploy", str(zone), "--yes")
    assert deployed.exit_code == 0, deployed.stdout + deployed.stderr
    [vault] = _of(arm, VAULT)
    assert vault["id"].split("/")[4] == "rg-aitrain-management-prod-eus2"
    [item] = _of(arm, ITEM)
    # The CycleCloud server, not the Open OnDemand portal ai-training also has (the portal keeps no data).
    [vm] = [r for r in _of(arm, "Microsoft.Compute/virtualMachines") if "-cc-" in r["name"]]
    assert item["properties"]["sourceResourceId"].lower() == vm["id"].lower()
    assert item["properties"]["policyId"].endswith("/backupPolicies/hpclz-daily-vm")


def test_plain_destroy_keeps_the_backups_and_deletes_the_server(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    result = run_cli("destroy", str(zone), "--yes")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert _of(arm, VAULT) and _of(arm, ITEM) and _of(arm, "Microsoft.RecoveryServices/vaults/backupPolicies")
    # The item keeps the server's recovery points, not the server: Azure keeps a deleted VM's recovery points.
    assert _of(arm, "Microsoft.Compute/virtualMachines") == []
    assert arm.world.soft_deleted_backups == {}


def test_a_vault_with_backups_is_refused_through_the_sdk_as_azure_refuses_it(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    from azure.core.exceptions import HttpResponseError

    from hpclz.azure.arm import Arm
    from hpclz.azure.clients import AzureClients

    assert run_cli("deploy", str(zone), "--yes").exit_code == 0
    [vault] = _of(arm, VAULT)
    adapter = Arm(AzureClients(arm.subscription_id))
    with pytest.raises(HttpResponseError) as refused:
        adapter.delete_resource(vault["id"], "2024-04-01")
    assert refused.value.error is not None and refused.value.error.code == "ServiceResourceNotEmptyWithContainerDetails"
    assert "Vault cannot be deleted as there are existing resources within the vault" in str(refused.value)
    assert _of(arm, VAULT)
