"""Deploy's hpclz-wheel step: the scheduler gets hpclz through CycleCloud's locker, never from a package index (its
dependencies come from PyPI only as the wheel's hash-pinned hpclz/requirements-lock.txt names them: docs/locker.md).

Before the compute deployment is submitted (the storage deployment, which creates the locker account and its wheel
container, has finished by then: compute depends on it), the deploying hpclz uploads its own wheel under its SHA-256
and passes "<sha256>/<file name>" as the compute deployment's hpclzWheel parameter, which becomes the CycleCloud
VM's hpclz-wheel tag; the scheduler checks the file against that digest before pip sees it. The value is a
deploy-time parameter, not part of the rendered template, so rendering never depends on the wheel; a new wheel
submits the compute deployment again, as a rotated secret does.

Where the locker's network refuses this machine (403 AuthorizationFailure: a workstation outside the zone's VNet),
the compute deployment goes on and `Delivery.finish` stages the wheel through the CycleCloud VM it made
(hpclz.deploy.wheel_staging); docs/deploy.md "Where deploy runs from".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hpclz.azure.errors import ArmFailure
from hpclz.deploy.runner import Event, Step
from hpclz.deploy.wheel import Wheel, hpclz_wheel
from hpclz.errors import ExitCode, HpclzError
from hpclz.plan.changeset import ChangeSet
from hpclz.render.cloudinit import WHEEL_PARAMETER, WHEEL_TAG
from hpclz.render.model import Deployment, DeploymentPlan
from hpclz.render.roles import WHEEL_CONTAINER
from hpclz.render.zone import Zone
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


STORED = "hpclzWheelStored"  # state output: the wheel this component's locker is known to hold
WHEEL_ROW = "hpclz wheel"  # its row in deploy's progress


class Delivery:
    """The wheel into the locker before the CycleCloud VM's deployment is submitted, straight from here when the
    locker's network lets this machine in; when it refuses with the network's answer (AuthorizationFailure), the
    deployment goes on and `finish` stages the wheel through the CycleCloud VM it made (hpclz.deploy.wheel_staging).
    State records the wheel once it is in the locker, so a run interrupted before that stages it on the next one."""

    def __init__(self, plan: DeploymentPlan, zone: Zone, wheel: Wheel | None, emit: Callable[[Event], None]) -> None:
        self.target = takes_wheel(plan)
        self.zone = zone
        self.wheel = wheel
        self.emit = emit
        self.delivered = False
        self.refused: str | None = None  # the locker's network refusal of this machine's upload

    def _say(self, step: Step, message: str) -> None:
        self.emit(Event(WHEEL_ROW, step, message))

    def direct(self) -> ArmFailure | None:
        from hpclz.azure.locker import NETWORK_REFUSAL, LockerError, upload_once

        assert self.wheel is not None
        try:
            new = upload_once(self.zone.locker_account_name, WHEEL_CONTAINER, self.wheel.blob, self.wheel.path)
        except LockerError as exc:
            if exc.code != NETWORK_REFUSAL:
                return ArmFailure("HpclzWheelUpload", str(exc))
            self.refused = exc.code
            self._say(
                Step.WAITING,
                f"the locker's network refuses this machine ({exc.code}): staging through the CycleCloud VM",
            )
            return None
        self.delivered = True
        self._say(Step.SUCCEEDED, f"uploaded directly to the locker{'' if new else ' (there already)'}")
        return None

    def wrap(
        self, before_submit: Callable[[Deployment], ArmFailure | None]
    ) -> Callable[[Deployment], ArmFailure | None]:
        """`before_submit` that first tries the direct upload when the deployment that names the wheel goes."""
        if self.wheel is None or self.target is None:
            return before_submit
        target = self.target.name

        def before(deployment: Deployment) -> ArmFailure | None:
            if deployment.name == target:
                refused = self.direct()
                if refused is not None:
                    return refused
            return before_submit(deployment)

        return before

    def finish(self, clients: Any, doc: StateDocument, save: Callable[[StateDocument], StateDocument]) -> StateDocument:
        """After the deployments: the wheel staged when the direct upload was refused (this run, or one interrupted
        before the wheel was recorded), then recorded in state."""
        if self.wheel is None or self.target is None or self.target.name not in doc.deployments:
            return doc
        key = f"{self.target.component}.{STORED}"
        if doc.outputs.get(key) == self.wheel.blob:
            return doc
        if not self.delivered and self.refused is None:  # its deployment was not submitted this time
            failure = self.direct()
            if failure is not None:
                raise HpclzError(failure.message, exit_code=ExitCode.AZURE_ERROR)
        if not self.delivered:
            self._stage(clients)
        self._say(Step.SUCCEEDED, f"{self.wheel.blob} is in the locker {self.zone.locker_account_name}")
        return save(doc.model_copy(update={"outputs": {**doc.outputs, key: self.wheel.blob}}))

    def _stage(self, clients: Any) -> None:
        from hpclz.azure.run_command import run_inline
        from hpclz.deploy.wheel_staging import Locker, stage

        assert self.wheel is not None and self.target is not None
        vm_id = cyclecloud_vm(clients, self.target.resource_group or "")
        identity = (
            f"/subscriptions/{clients.subscription_id}/resourceGroups/{self.zone.rg['management']}/providers/"
            f"Microsoft.ManagedIdentity/userAssignedIdentities/{self.zone.identity_name('scheduler')}"
        )
        locker = Locker(self.zone.locker_account_name, WHEEL_CONTAINER, identity)
        vm = vm_id.rsplit("/", 1)[-1]
        self._say(Step.SUBMITTED, f"staging {self.wheel.name} through {vm} (managed Run Commands)")

        def run(name: str, script: str, timeout_s: int) -> tuple[bool, str]:
            outcome = run_inline(clients, vm_id, name, script, timeout_s=timeout_s, progress=lambda _m: None)
            ok = outcome.state.lower() == "succeeded" and outcome.exit_code == 0
            said = (outcome.stderr or outcome.stdout or outcome.message).strip().splitlines()
            return ok, said[-1] if said else f"run command {name} ended {outcome.state}"

        stage(self.wheel, locker, run, lambda message: self._say(Step.SUBMITTED, message))


def cyclecloud_vm(clients: Any, resource_group: str) -> str:
    """The VM the compute deployment gave the wheel: the one carrying the hpclz-wheel tag."""
    from hpclz.azure.errors import azure_errors

    with azure_errors(f"list VMs in {resource_group}"):
        found = [vm.id for vm in clients.compute.virtual_machines.list(resource_group) if WHEEL_TAG in (vm.tags or {})]
    if len(found) != 1:
        raise HpclzError(
            f"{'no' if not found else 'more than one'} VM tagged {WHEEL_TAG} in {resource_group} to stage the wheel",
            exit_code=ExitCode.AZURE_ERROR,
        )
    return str(found[0])
