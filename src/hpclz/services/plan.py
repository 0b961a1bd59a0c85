"""`hpclz plan`: render the config, compare it with the last applied state (or ask ARM what-if),
and say what an apply would do and cost. Optionally save the plan for `hpclz deploy --plan`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from hpclz.config.loader import LoadedConfig, load_config
from hpclz.config.root import LandingZoneConfig
from hpclz.cost.estimate import Estimate, estimate, with_delta
from hpclz.errors import ExitCode
from hpclz.findings import Finding, Severity
from hpclz.outfile import check_out_file
from hpclz.output import CommandResult, ResultBody
from hpclz.plan.changeset import ChangeSet, StateRef
from hpclz.plan.config_diff import config_changes
from hpclz.plan.offline import create_change, offline_changeset
from hpclz.plan.resources import deployment_resources
from hpclz.plan.saved import save_plan
from hpclz.render.model import DeploymentPlan, Scope
from hpclz.state.model import StateDocument


class PlanResult(ResultBody):
    file: str
    changes: ChangeSet | None = None
    findings: list[Finding] = Field(default_factory=list)
    state_location: str = ""
    saved_to: str | None = None
    detailed_exitcode: bool = False
    estimate: Estimate | None = Field(default=None, description="Monthly cost estimate (hpclz.cost).")

    def exit_code(self) -> ExitCode:
        if self.changes is None or self.changes.blocked:
            return ExitCode.FAILED
        if self.detailed_exitcode and self.changes.has_changes:
            return ExitCode.CHANGES_PRESENT
        return ExitCode.OK

    def json_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"file": self.file, "state_location": self.state_location, "saved_to": self.saved_to}
        if self.changes is not None:
            body.update(self.changes.payload())
        if self.estimate is not None:
            body["cost_estimate"] = self.estimate.payload()
        return body


def plan(
    path: str | Path,
    *,
    what_if: bool = False,
    out: str | Path | None = None,
    force: bool = False,
    detailed_exitcode: bool = False,
    suppress: list[str] | None = None,
    hours: float | None = None,
) -> CommandResult[PlanResult]:
    if out is not None:  # before any work: a refused --out must not cost a what-if call
        check_out_file(out, inputs=[path], force=force)
    result = _plan(path, what_if=what_if, out=out, detailed_exitcode=detailed_exitcode, suppress=suppress, hours=hours)
    return CommandResult(command="plan", payload=result, findings=result.findings, exit_code=result.exit_code())


def _plan(
    path: str | Path,
    *,
    what_if: bool,
    out: str | Path | None,
    detailed_exitcode: bool,
    suppress: list[str] | None,
    hours: float | None = None,
) -> PlanResult:
    from hpclz.deploy.backends import open_backend
    from hpclz.render.build import build_plan
    from hpclz.services.validate import check_config

    loaded = load_config(path)
    result = PlanResult(file=str(path), detailed_exitcode=detailed_exitcode)
    result.findings, _ = check_config(loaded, suppress or [])
    if any(f.severity is Severity.ERROR for f in result.findings):
        return result  # a config that fails validation has no plan worth showing
    deployment_plan = build_plan(loaded.config)
    backend = open_backend(loaded.config, base_dir=Path(path).resolve().parent, config_file=str(path))
    result.state_location = backend.location
    state = backend.read()
    changes = online_changeset(loaded, deployment_plan) if what_if else offline_changeset(deployment_plan, state)
    attach_config_diff(changes, loaded, state)
    result.changes = changes
    result.estimate = with_delta(estimate(loaded.config, hours=hours), applied_config(state))
    if out is not None:
        save_plan(out, deployment_plan, changes, loaded.config, state)
        result.saved_to = str(out)
    return result


def applied_config(state: StateDocument | None) -> LandingZoneConfig | None:
    """The config of the last apply, as a model; None when there is none or it no longer validates."""
    if state is None or not state.applied_config:
        return None
    try:
        return LandingZoneConfig.model_validate(state.applied_config)
    except ValueError:
        return None  # an older schema: the estimate shows no delta rather than a wrong one


def attach_config_diff(changes: ChangeSet, loaded: LoadedConfig, state: StateDocument | None) -> None:
    changes.state = StateRef.of(state)
    if state is None or not state.applied_config:
        changes.config_baseline = state is None
        return
    changes.config_changes = config_changes(state.applied_config, loaded.config)


def online_changeset(loaded: LoadedConfig, deployment_plan: DeploymentPlan) -> ChangeSet:
    """ARM what-if per deployment; a deployment whose resource group does not exist yet is all creates
    (what-if cannot run into a missing group, and everything in it is new anyway)."""
    from hpclz.azure.arm import Arm
    from hpclz.azure.clients import AzureClients, resolve_subscription
    from hpclz.azure.errors import azure_errors
    from hpclz.azure.settings import settings_from_env
    from hpclz.plan.whatif import whatif_changeset

    metadata = loaded.config.metadata
    subscription = resolve_subscription(metadata.resolved_subscription_id())
    arm = Arm(AzureClients(subscription, settings_from_env(metadata.cloud)))
    results: dict[str, dict[str, Any]] = {}
    missing = []
    with azure_errors("ARM what-if"):
        for d in deployment_plan.deployments:
            if d.scope is Scope.RESOURCE_GROUP and d.resource_group and arm.get_group(d.resource_group) is None:
                missing.append(d)
            else:
                results[d.name] = arm.what_if(d)
    changes = whatif_changeset(
        results, landing_zone=deployment_plan.landing_zone, environment=deployment_plan.environment
    )
    known = {r.id.lower() for r in changes.resources}
    for d in missing:
        changes.resources += [
            create_change(r) for r in deployment_resources(d, subscription) if r.id.lower() not in known
        ]
    return changes
