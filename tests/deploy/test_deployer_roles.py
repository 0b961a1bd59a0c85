"""Least privilege for the person who runs hpclz, by removal: the deploying user's roles (Owner, or the two built-ins
it splits into) are each needed by a named step of deploy or destroy, and without one that step fails with ARM's
AuthorizationFailed as hpclz's one-line error, nothing reaching Azure past the refused request.

Owner is Contributor's "*" plus what Contributor's notActions take out ("Microsoft.Authorization/*/Delete",
"Microsoft.Authorization/*/Write", ...), which User Access Administrator holds ("Microsoft.Authorization/*"):
tests/support/arm_standin/data/builtin_roles.json, from the Azure RBAC built-in roles reference."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RunCli
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.proving import DEPLOYER

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def holds(arm: ArmStandIn, *roles: str) -> None:
    """The deploying user holds exactly these roles on the subscription (in place of the stand-in's Owner)."""
    arm.proving.authorization.seeded.clear()
    for role in roles:
        arm.proving.authorization.grant(DEPLOYER.object_id, role, arm.proving.subscription_scope)


def writes(arm: ArmStandIn) -> list[str]:
    return [f"{r.method} {r.path} {r.status}" for r in arm.log if r.method in ("PUT", "DELETE", "PATCH")]


def one_line_refusal(text: str, action: str) -> None:
    assert "AuthorizationFailed" in text and action in text, text[-3000:]
    assert "Traceback" not in text


def test_contributor_and_user_access_administrator_are_enough_to_deploy_and_destroy(
    arm: ArmStandIn, manufacturing: Path, run_cli: RunCli
) -> None:
    """The control for the removals below: the two halves of Owner deploy the zone and destroy it."""
    holds(arm, "Contributor", "User Access Administrator")
    deployed = run_cli("deploy", str(manufacturing), "--yes")
    assert deployed.exit_code == 0, deployed.stdout[-3000:] + deployed.stderr
    destroyed = run_cli("destroy", str(manufacturing), "--yes", "--include-data")
    assert destroyed.exit_code == 0, destroyed.stdout[-3000:] + destroyed.stderr


def test_without_contributor_deploy_stops_in_preflight(arm: ArmStandIn, manufacturing: Path, run_cli: RunCli) -> None:
    """User Access Administrator alone may not even validate a deployment (Microsoft.Resources/deployments/*, which
    Contributor holds through "*"): preflight refuses every deployment, organization first, and nothing is made."""
    holds(arm, "User Access Administrator")
    result = run_cli("deploy", str(manufacturing), "--yes")
    assert result.exit_code != 0
    one_line_refusal(result.stdout + result.stderr, "Microsoft.Resources/deployments/validate/action")
    # Preflight validation (HPCLZ-TPL-101) names the organization deployment, first of all, and stops there.
    assert "HPCLZ-TPL-101 deployment hpclz-cae-test-organization: AuthorizationFailed" in result.stdout
    assert "preflight failed; nothing was deployed" in result.stdout
    assert [w for w in writes(arm) if not w.endswith((" 403", " 401"))] == []
    assert not [r for r in arm.world.resources.values() if r["type"] != "Microsoft.Authorization/policyAssignments"]


def test_without_user_access_administrator_deploy_stops_at_the_first_role_assignment(
    arm: ArmStandIn, manufacturing: Path, run_cli: RunCli
) -> None:
    """Contributor alone creates resources but no role assignment (its notActions hold Microsoft.Authorization/*/Write):
    the first deployment that grants a role fails on that assignment, and no role assignment exists."""
    holds(arm, "Contributor")
    result = run_cli("deploy", str(manufacturing), "--yes")
    assert result.exit_code != 0
    one_line_refusal(result.stdout + result.stderr, "Microsoft.Authorization/roleAssignments/write")
    assert not [r for r in arm.world.resources.values() if r["type"] == "Microsoft.Authorization/roleAssignments"]
    # The network step (the first to grant roles: Reader on the Bastion host for the users and admins groups,
    # hpclz.render.roles.bastion_readers) fails; what depends on it never starts.
    both = result.stdout + result.stderr
    assert "hpclz-cae-test-network: failed - AuthorizationFailed" in both, both[-3000:]
    assert "hpclz-cae-test-compute: blocked - not started" in both


def test_a_reader_cannot_destroy_and_nothing_is_deleted(
    arm: ArmStandIn, manufacturing: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    """Destroy as a user who only reads: the first delete is refused and every resource is still there."""
    predeployed(manufacturing)
    before = set(arm.world.resources)
    holds(arm, "Reader")
    result = run_cli("destroy", str(manufacturing), "--yes", "--include-data")
    assert result.exit_code != 0
    one_line_refusal(result.stdout + result.stderr, "Microsoft.Resources/subscriptions/resourceGroups/delete")
    assert set(arm.world.resources) == before
