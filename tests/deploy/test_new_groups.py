"""Finding 6 of issue 13: on a first deploy no resource group exists, and preflight used to skip ARM validate for
every deployment into one. Now they are validated together under a subscription-scope template that declares the
groups (as CCWS deploys: Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/mainTemplate.bicep), before any write."""

from __future__ import annotations

from pathlib import Path

from hpclz.azure.arm import Arm
from hpclz.azure.clients import AzureClients
from hpclz.config.loader import load_config
from hpclz.deploy.new_groups import wrapper
from hpclz.deploy.preflight import gather
from hpclz.deploy.secrets import resolve_secrets
from hpclz.render.build import build_plan
from tests.support.arm_standin import ArmStandIn


def test_first_deploy_validates_every_group_deployment_before_any_write(arm: ArmStandIn, zone: Path, run_cli) -> None:
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stdout + result.stderr
    first_write = next(i for i, r in enumerate(arm.log) if r.method == "PUT")
    validated = [r.path for r in arm.log[:first_write] if r.method == "POST" and r.path.endswith("/validate")]
    assert any("/providers/Microsoft.Resources/deployments/hpclz-preflight-" in p for p in validated), validated


def test_a_template_error_in_a_group_that_does_not_exist_yet_is_found(arm: ArmStandIn, zone: Path) -> None:
    """The message is ARM's own for a parameter the deployment does not pass (InvalidTemplate)."""
    loaded = load_config(zone)
    plan = build_plan(loaded.config)
    compute = next(d for d in plan.deployments if d.component == "compute")
    compute.parameters.pop("cycleCloudVmSize")
    # The preset's secrets (Slurm accounting's password) go along, as deploy passes them: only the dropped
    # parameter is missing.
    ctx = gather(Arm(AzureClients(arm.subscription_id)), loaded, plan, resolve_secrets(loaded, plan))
    [(names, error)] = ctx.validation_errors.items()
    assert compute.name in names
    assert "InvalidTemplate" in error and "cycleCloudVmSize" in error
    assert [r for r in arm.log if r.method in ("PUT", "DELETE")] == []  # validate only: nothing created


def test_secure_values_travel_as_parameters_not_in_the_template() -> None:
    from tests.conftest import REPO

    loaded = load_config(REPO / "configs" / "finance.yaml")
    plan = build_plan(loaded.config)
    groups = [d for d in plan.deployments if d.resource_group]
    secrets = {groups[0].name: {"licence": "s3cr3t-value"}}
    whole, values = wrapper(groups, secrets, plan.location)
    assert "s3cr3t-value" not in str(whole.template) and values == {"secure0": "s3cr3t-value"}
    nested = [r for r in whole.template["resources"] if r["type"] == "Microsoft.Resources/deployments"]
    assert nested[0]["properties"]["parameters"]["licence"] == {"value": "[parameters('secure0')]"}
    declared = {r["name"] for r in whole.template["resources"] if r["type"] == "Microsoft.Resources/resourceGroups"}
    assert declared == {d.resource_group for d in groups}
