"""Least privilege for whoever runs `hpclz verify --via run-command`, by removal: with Virtual Machine Contributor on
the compute group (Microsoft.Compute/virtualMachines/*, which holds runCommands write, read and delete: the Azure RBAC
built-in roles reference, tests/support/arm_standin/data/builtin_roles.json) verify runs on the scheduler; without it
the run command is refused with ARM's AuthorizationFailed as one line, and nothing runs or is left on the VM."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.proving import DEPLOYER
from tests.support.azurite import azurite  # noqa: F401  (a fixture, used by name)
from tests.verify.test_dispatch_slurm import GOOD, plant
from tests.verify.test_remote import (  # noqa: F401  (fixtures, used by name)
    COMPUTE_RG,
    _remote,
    clean_slurm,
    record_compute_group,
    scheduler_vm,
    slurm_cluster,
    zone,
)

pytestmark = pytest.mark.timeout(240)


def holds(arm: ArmStandIn, *grants: tuple[str, str]) -> None:
    """The user running verify holds exactly these (role, scope) pairs, in place of the stand-in's Owner."""
    arm.proving.authorization.seeded.clear()
    for role, scope in grants:
        arm.proving.authorization.grant(DEPLOYER.object_id, role, scope)


def test_vm_contributor_on_the_compute_group_is_enough_to_verify(
    scheduler_vm: ArmStandIn,  # noqa: F811
    zone: Path,  # noqa: F811
    run_cli: Callable[..., CliResult],
    tmp_path: Path,
) -> None:
    plant(tmp_path / "readings", {"node1": GOOD, "node2": GOOD})
    record_compute_group(zone)
    compute = f"{scheduler_vm.proving.subscription_scope}/resourceGroups/{COMPUTE_RG}"
    holds(scheduler_vm, ("Virtual Machine Contributor", compute))
    result = _remote(run_cli, zone)
    assert result.exit_code == 0, result.stderr[-3000:]
    assert len(scheduler_vm.compute.scripts) == 1 and scheduler_vm.compute.commands == {}


def test_without_vm_contributor_the_run_command_is_refused_and_nothing_runs(
    scheduler_vm: ArmStandIn,  # noqa: F811
    zone: Path,  # noqa: F811
    run_cli: Callable[..., CliResult],
    tmp_path: Path,
) -> None:
    plant(tmp_path / "readings", {"node1": GOOD, "node2": GOOD})
    record_compute_group(zone)
    holds(scheduler_vm, ("Reader", scheduler_vm.proving.subscription_scope))
    result = _remote(run_cli, zone)
    assert result.exit_code == 5, result.stderr[-3000:]
    assert "AuthorizationFailed" in result.stderr
    assert "Microsoft.Compute/virtualMachines/runCommands/write" in result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert re.match(
        r"error: start the run command hpclz-verify-\S+ on aitrain-prod-scheduler: AuthorizationFailed", last
    )
    assert scheduler_vm.compute.scripts == [] and scheduler_vm.compute.commands == {}
