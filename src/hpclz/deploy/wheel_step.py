"""Deploy's hpclz-wheel step (issue 13, finding 18): the scheduler gets hpclz through CycleCloud's locker.

Before the compute deployment is submitted (the storage deployment, which creates the locker account and its wheel
container, has finished by then: compute depends on it), the deploying hpclz uploads its own wheel under its SHA-256
and passes "<sha256>/<file name>" as the compute deployment's hpclzWheel parameter, which becomes the CycleCloud
VM's hpclz-wheel tag; the scheduler checks the file against that digest before pip sees it. The value is a
deploy-time parameter, not part of the rendered template, so rendering never depends on the wheel; a new wheel
submits the compute deployment again, as a rotated secret does.
"""

from __future__ import annotations

from collections.abc import Callable

from hpclz.azure.errors import ArmFailure
from hpclz.deploy.wheel import Wheel, hpclz_wheel
from hpclz.errors import HpclzError
from hpclz.plan.changeset import ChangeSet
from hpclz.render.cloudinit import WHEEL_PARAMETER
from hpclz.render.model import Deployment, DeploymentPlan
from hpclz.render.roles import WHEEL_CONTAINER
from hpclz.state.model import StateDocument

Secrets = dict[str, dict[str, str]]


def takes_wheel(plan: DeploymentPlan) -> Deployment | None:
    """The deployment that passes the wheel to the CycleCloud VM, when the plan has one."""
    return next((d for d in plan.deployments if WHEEL_PARAMETER in d.template.get("parameters", {})), None)


def prepare(plan: DeploymentPlan) -> Wheel | None:
    """The wheel, found or built before anything is confirmed, so a missing one stops deploy early."""
    return hpclz_wheel() if takes_wheel(plan) is not None else None


def with_wheel(plan: DeploymentPlan, parameters: Secrets, wheel: Wheel | None) -> Secrets:
    """The deploy-time parameter values with the wheel's added to the deployment that takes it."""
    target = takes_wheel(plan)
    if wheel is None or target is None:
        return parameters
    return {**parameters, target.name: {**parameters.get(target.name, {}), WHEEL_PARAMETER: wheel.blob}}


def resubmit_for_wheel(
    changes: ChangeSet, plan: DeploymentPlan, doc: StateDocument | None, wheel: Wheel | None
) -> None:
    """A wheel other than the one state says the CycleCloud VM was given: its deployment goes again."""
    target = takes_wheel(plan)
    if wheel is None or target is None or doc is None or target.name not in doc.deployments:
        return
    if doc.outputs.get(f"{target.component}.{WHEEL_PARAMETER}") != wheel.blob and target.name not in changes.resubmit:
        changes.resubmit.append(target.name)


def uploading(
    plan: DeploymentPlan,
    account: str,
    wheel: Wheel | None,
    before_submit: Callable[[Deployment], ArmFailure | None],
) -> Callable[[Deployment], ArmFailure | None]:
    """`before_submit` that first puts the wheel in the locker when the deployment that names it is submitted."""
    target = takes_wheel(plan)
    if wheel is None or target is None:
        return before_submit

    def before(deployment: Deployment) -> ArmFailure | None:
        if deployment.name == target.name:
            from hpclz.azure.locker import upload_once

            try:
                upload_once(account, WHEEL_CONTAINER, wheel.blob, wheel.path)
            except HpclzError as exc:
                return ArmFailure("HpclzWheelUpload", str(exc))
        return before_submit(deployment)

    return before
