"""`plan --target` and the address errors of `--target` / `--replace`, on the energy preset deployed to the ARM
stand-in (terraform's -target and -replace: https://developer.hashicorp.com/terraform/cli/commands/plan#target-address).
`deploy --target`, `--replace` and `plan --destroy` end to end are rows of tests/deploy/test_day2.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import RunCli
from tests.deploy.test_day2 import edit, writes_since
from tests.support.arm_standin import ArmStandIn

BASTION = "Microsoft.Network/bastionHosts/bas-energy-prod-scus"


def test_plan_target_shows_only_the_targeted_deployment_and_is_not_saved(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    edit(energy, (("workload: seismic", "workload: seismic-v2"),))  # a tag: every deployment changes
    whole = json.loads(run_cli("plan", str(energy), "-o", "json").stdout)["result"]
    assert {r["deployment"] for r in whole["resources"] if r["action"] != "no_change"} >= {
        "hpclz-energy-prod-network",
        "hpclz-energy-prod-storage",
    }

    saved = energy.parent / "plan.json"
    result = run_cli("plan", str(energy), "--target", BASTION, "--out", str(saved), "-o", "json")
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)["result"]
    changed = {r["deployment"] for r in body["resources"] if r["action"] != "no_change"}
    assert "hpclz-energy-prod-network" in changed and "hpclz-energy-prod-storage" not in changed
    assert body["config_changes"] == []  # a config diff cannot be cut to some deployments
    assert body["saved_to"] is None and "--target" in body["not_saved"] and not saved.exists()


def test_an_address_that_names_nothing_is_a_usage_error_before_any_write(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    for flag in ("--target", "--replace"):
        planned = run_cli("plan", str(energy), flag, "Microsoft.Network/bastionHosts/nope")
        assert planned.exit_code == 64 and "no resource of this landing zone match" in planned.stderr
        start = len(arm.log)
        deployed = run_cli("deploy", str(energy), "--yes", flag, "Microsoft.Network/bastionHosts/nope")
        assert deployed.exit_code == 64, deployed.stderr
        assert writes_since(arm, start) == []
