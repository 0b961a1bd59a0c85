"""The one definition of "deployment unchanged" (hpclz.plan.unchanged): succeeded, with the same template hash."""

from __future__ import annotations

import pytest

from hpclz.plan.unchanged import deployment_unchanged, unchanged_deployments
from hpclz.render.build import build_plan
from hpclz.state.model import DeploymentStatus
from tests.plan.support import applied_state, edited, preset


def test_a_state_that_applied_this_plan_leaves_every_deployment_unchanged() -> None:
    config = preset("energy")
    plan = build_plan(config)
    assert unchanged_deployments(plan, applied_state(config, plan)) == {d.name for d in plan.deployments}


def test_nothing_is_unchanged_before_the_first_deploy() -> None:
    plan = build_plan(preset("energy"))
    assert unchanged_deployments(plan, None) == set()


@pytest.mark.parametrize("status", [DeploymentStatus.FAILED, DeploymentStatus.RUNNING, DeploymentStatus.CANCELED])
def test_a_deployment_that_did_not_succeed_is_applied_again(status: DeploymentStatus) -> None:
    config = preset("energy")
    plan = build_plan(config)
    state = applied_state(config, plan)
    first = plan.deployments[0]
    state.deployments[first.name].status = status
    assert first.name not in unchanged_deployments(plan, state)
    assert not deployment_unchanged(state, first)


def test_a_tag_edit_reaches_every_template_so_no_deployment_is_skipped() -> None:
    config = preset("energy")
    plan = build_plan(config)
    state = applied_state(config, plan)
    retagged = build_plan(edited(config, lambda data: data["metadata"]["tags"].update({"costCenter": "hpc-42"})))
    assert unchanged_deployments(retagged, state) == set()
