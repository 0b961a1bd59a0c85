"""`hpclz deploy` after validation: render (or read the saved plan), preflight against Azure, then apply the plan
under the state lock, or with --refresh-only record in state what Azure has."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from hpclz.config.loader import LoadedConfig
from hpclz.deploy.app_roles import AppRolesResult
from hpclz.deploy.contract import Contract, after_run, announce_waits, check_contract, removals_for
from hpclz.deploy.next_steps import next_steps, node_script_steps
from hpclz.deploy.secrets import require_prerequisites, resolve_secrets
from hpclz.errors import ExitCode, HpclzError
from hpclz.findings import Finding, Severity
from hpclz.output import ErrorEntry, ResultBody
from hpclz.plan.changeset import ChangeSet
from hpclz.plan.unchanged import unchanged_deployments
from hpclz.render.model import DeploymentPlan
from hpclz.state.backend import StateBackend
from hpclz.state.model import StateDocument

if TYPE_CHECKING:
    from hpclz.azure.graph import Graph
    from hpclz.deploy.runner import Runner, RunResult
    from hpclz.deploy.wheel import Wheel
    from hpclz.plan.saved import SavedPlan

Confirm = Callable[[DeploymentPlan, set[str], ChangeSet], bool]


def _yes(_plan: DeploymentPlan, _unchanged: set[str], _changes: ChangeSet) -> bool:
    return True


def _ignore(_event: Any) -> None:
    return None


@dataclass(frozen=True)
class DeployOptions:
    """`confirm` gets the plan, the names of its deployments the state says are unchanged (skipped), and the change
    set deploy will apply, computed as `hpclz plan` computes it. `contract`: consent flags, --replace and --target,
    --refresh and --refresh-only."""

    config: Path
    plan_file: Path | None = None
    confirm: Confirm = _yes
    on_event: Callable[[Any], None] = _ignore
    suppress: tuple[str, ...] = ()
    contract: Contract = field(default_factory=Contract)
    over_budget: bool = False


class DeploymentOutcome(BaseModel):
    name: str
    component: str
    status: str
    error: str | None = None
    error_code: str | None = Field(default=None, description="The innermost ARM error code, when it failed.")
    blocked_by: list[str] = Field(default_factory=list)


class DeployResult(ResultBody):
    file: str
    stage: str = Field(description="How far it got: validate, preflight, confirm, deploy.")
    findings: list[Finding] = Field(default_factory=list)
    deployments: list[DeploymentOutcome] = Field(default_factory=list)
    outputs: dict[str, Any] = Field(default_factory=dict)
    next_steps: list[str] = Field(default_factory=list)
    state_location: str | None = None
    cancelled: bool = Field(False, description="The person answered no at the confirmation: nothing was deployed.")
    changes: ChangeSet | None = Field(default=None, description="The change set shown before confirming.")
    removed: list[dict[str, Any]] = Field(
        default_factory=list, description="Deletes carried out for the change set: id, type, action, reason."
    )
    state_updated: list[str] = Field(
        default_factory=list, description="`--refresh-only`: what state now records as Azure has it, one line each."
    )
    app_roles: AppRolesResult | None = Field(
        default=None,
        description="CycleCloud's app roles for identity.groups, made through Microsoft Graph (hpclz.deploy.app_roles).",
    )
    unfinished: list[str] = Field(
        default_factory=list,
        description="Steps after the ARM run that did not succeed, one line each; state keeps them pending and the "
        "next deploy repeats them.",
    )

    def json_body(self) -> dict[str, Any]:
        body = self.model_dump(mode="json", exclude={"findings", "changes"})
        body["changes"] = self.changes.payload() if self.changes is not None else None
        return body

    def errors(self) -> list[ErrorEntry]:
        """The envelope's `errors`: each failed deployment with its innermost ARM error, so a script need not
        dig through `result` to learn why."""
        return [
            ErrorEntry(code=d.error_code or "DeploymentFailed", message=f"{d.name}: {d.error}", path=d.name)
            for d in self.deployments
            if d.error
        ] + [ErrorEntry(code="AfterDeployStepFailed", message=line) for line in self.unfinished]


def render_plan(loaded: LoadedConfig, saved: SavedPlan | None) -> DeploymentPlan:
    """The plan to preflight: rendered from the config, or the one saved by `hpclz plan --out` (`--plan`).

    A saved plan is read once: the copy preflighted here is the copy checked against the config and the
    state under the lock (`_apply`) and applied, even if the file is replaced in between.
    """
    if saved is not None:
        return saved.plan
    from hpclz.render.build import build_plan

    return build_plan(loaded.config)


def refuse_over_budget(loaded: LoadedConfig) -> None:
    """Deploying past the budget is a decision, not an accident: it takes --over-budget."""
    from hpclz.cost.estimate import estimate

    budget = loaded.config.budget
    if budget is None:
        return
    est = estimate(loaded.config)
    if est.total_usd > budget.monthly_usd:
        line = loaded.source.locate(("budget", "monthly_usd")).line
        raise HpclzError(
            f"{loaded.file}:{line}: budget.monthly_usd: estimated ${est.total_usd:,.2f}/month exceeds the "
            f"${budget.monthly_usd:,.2f} budget; nothing was deployed",
            hint="see `hpclz plan` for the lines; lower the estimate, raise the budget, or pass --over-budget",
        )


def apply(loaded: LoadedConfig, opts: DeployOptions, findings: list[Finding]) -> tuple[DeployResult, ExitCode]:
    """The deploy of a loaded config whose validation gave `findings` (any error stops it before Azure is asked)."""
    result = DeployResult(file=str(opts.config), stage="validate", findings=findings)
    return result, _deploy(result, loaded, opts)


def _deploy(result: DeployResult, loaded: LoadedConfig, opts: DeployOptions) -> ExitCode:
    contract, confirm, on_event, plan_file = opts.contract, opts.confirm, opts.on_event, opts.plan_file
    if _failing(result.findings):
        return ExitCode.FAILED
    if contract.refresh_only:
        return _refresh_only(result, loaded, plan_file, contract, (confirm, on_event))
    if not opts.over_budget:
        refuse_over_budget(loaded)
    saved = None
    if plan_file is not None:
        from hpclz.plan.saved import read_saved_plan

        saved = read_saved_plan(plan_file)
    plan = render_plan(loaded, saved)
    require_prerequisites(loaded, plan)
    secrets = resolve_secrets(loaded, plan)
    from hpclz.deploy.wheel_step import prepare

    wheel = prepare(plan)  # the scheduler's hpclz, found or built before anything is asked or changed

    from hpclz.deploy.preflight import preflight

    arm = _arm(loaded)
    result.stage = "preflight"
    announce_waits(arm, on_event)
    backend = _backend(loaded, arm)
    # Everything that can refuse does so before preflight's first call, another subscription's state included (the
    # live checks would otherwise judge its global names all "taken"); `_apply` checks again under the lock.
    check_contract(loaded, plan, backend.read(), (arm.subscription_id, backend.location), contract, secrets, early=True)
    result.findings += preflight(arm, loaded, plan, secrets, opts.suppress, unchanged=_unchanged(plan, backend))
    if _failing(result.findings):
        return ExitCode.FAILED
    return _apply(
        loaded,
        plan,
        (plan_file, saved) if plan_file and saved else None,
        arm,
        backend,
        secrets,
        result,
        confirm,
        on_event,
        dataclasses.replace(contract, refresh=contract.refresh or bool(saved and saved.changes.get("refreshed"))),
        wheel,
    )


def _arm(loaded: LoadedConfig) -> Any:
    from hpclz.azure.arm import Arm
    from hpclz.azure.clients import AzureClients, resolve_subscription
    from hpclz.azure.settings import settings_from_env

    metadata = loaded.config.metadata
    return Arm(
        AzureClients(resolve_subscription(metadata.resolved_subscription_id()), settings_from_env(metadata.cloud))
    )


def _refresh_only(
    result: DeployResult,
    loaded: LoadedConfig,
    plan_file: Path | None,
    contract: Contract,
    callbacks: tuple[Confirm, Callable[[Any], None]],
) -> ExitCode:
    """Only state changes: no preflight, no secrets, no budget, and nothing that would write to Azure."""
    from hpclz.deploy.refresh_only import refresh_only

    if plan_file is not None or contract.scope.replace or contract.scope.target:
        raise HpclzError(
            "--refresh-only writes nothing to Azure: it takes no --plan, --replace or --target",
            exit_code=ExitCode.USAGE,
        )
    confirm, on_event = callbacks
    arm = _arm(loaded)
    announce_waits(arm, on_event)
    return refresh_only(loaded, render_plan(loaded, None), arm, _backend(loaded, arm), result, confirm)


def _apply(
    loaded: LoadedConfig,
    plan: DeploymentPlan,
    saved_plan: tuple[Path, SavedPlan] | None,
    arm: Any,
    backend: StateBackend,
    secrets: dict[str, dict[str, str]],
    result: DeployResult,
    confirm: Confirm,
    on_event: Callable[[Any], None],
    contract: Contract,
    wheel: Wheel | None = None,
) -> ExitCode:
    from hpclz.deploy.destroy import outcome_dict
    from hpclz.deploy.prune import failures
    from hpclz.deploy.storagepass import StoragePass, password
    from hpclz.deploy.wheel_step import Delivery, resubmit_for_wheel, with_wheel
    from hpclz.plan.contract import accounting_secret_path
    from hpclz.render.zone import Zone
    from hpclz.state.factory import new_state
    from hpclz.state.renamed import config_ref

    result.state_location = backend.location
    with backend.lock("deploy"):
        doc = backend.read()
        plan, result.changes = _locked_changes(loaded, plan, saved_plan, arm, backend, doc, secrets, contract)
        resubmit_for_wheel(result.changes, plan, doc, wheel)
        result.stage = "confirm"
        if not confirm(plan, unchanged_deployments(plan, doc), result.changes):
            # A "no" is a decision, not an interruption: exit 1 (docs/exit-codes.md); Ctrl-C at the prompt is 130.
            result.cancelled = True
            return ExitCode.FAILED
        result.stage = "deploy"
        doc = doc or backend.write(new_state(loaded.config))
        ref = config_ref(backend, loaded.file)
        if ref is not None and doc.config_file != ref:  # what tells a later rename of this zone (state.renamed)
            doc = backend.write(doc.model_copy(update={"config_file": ref}))
        removals = removals_for(arm, plan, doc, result.changes)
        runner = _runner(arm, plan, doc, backend, with_wheel(plan, secrets, wheel), on_event, removals, result.changes)
        delivery = Delivery(plan, Zone(loaded.config), wheel, on_event)
        runner.before_submit = delivery.wrap(runner.before_submit)
        run = _run(runner, loaded)
        registered: set[str] | None = None
        final = runner.doc
        if run.ok:
            final = after_run(loaded, plan, backend, removals, final, secrets, partial=bool(contract.scope.target))
            final = delivery.finish(arm.clients, final, backend.write)
            value = password(plan, secrets, accounting_secret_path(loaded))
            try:
                final = StoragePass(Zone(loaded.config), value, result.changes, on_event).finish(
                    arm.clients, final, backend.write
                )
            except HpclzError as error:
                # A scheduler that cannot take the new password (stopped, cluster-init not done, slurmdbd not
                # restarting) must not also cost the app roles, the report and the next steps: they still come, the
                # rewrite stays pending in state, and the deploy fails at the end.
                result.unfinished.append(str(error))
            graph = _graph(arm)  # one pipeline, one token, for both of deploy's Graph steps
            final, result.app_roles = _app_roles(graph, loaded, final, backend)
            registered = _registered_redirects(graph, loaded)
    result.removed = [outcome_dict(o) for o in removals.outcomes]
    _report(result, plan, run, final)
    if not run.ok:
        return ExitCode.INTERRUPTED if run.interrupted else ExitCode.AZURE_ERROR
    if failures(removals.outcomes):
        return ExitCode.AZURE_ERROR  # the deletes that did not happen stay in state: a rerun tries again
    missing = None if result.app_roles is None else {(m.path, m.app_role) for m in result.app_roles.missing}
    result.next_steps = next_steps(loaded, final, missing, registered) + node_script_steps(result.changes)
    return ExitCode.AZURE_ERROR if result.unfinished else ExitCode.OK


def _graph(arm: Any) -> Graph:
    from hpclz.azure.graph import Graph

    return Graph(arm.clients.settings, arm.clients.credential)


def _registered_redirects(graph: Graph, loaded: LoadedConfig) -> set[str] | None:
    """The Single-page application redirect URIs CycleCloud's app registration holds, read through Microsoft Graph
    with the deploy's own credential; None where there is no app to read or Graph would not answer (the next steps
    then list every URI the zone needs)."""
    from hpclz.azure.graph import GraphError

    entra = loaded.config.identity.cyclecloud_entra
    if entra is None or graph.settings.graph_refusal() is not None:
        return None
    try:
        uris = graph.spa_redirect_uris(entra.client_id)
    except GraphError:
        return None
    return None if uris is None else set(uris)


def _app_roles(
    graph: Graph, loaded: LoadedConfig, doc: StateDocument, backend: StateBackend
) -> tuple[StateDocument, AppRolesResult | None]:
    """Entra ID is not ARM: the app roles go through Microsoft Graph with the deploy's own credential."""
    from hpclz.deploy.app_roles import grant

    return grant(graph, loaded, doc, backend.write)


def _locked_changes(
    loaded: LoadedConfig,
    plan: DeploymentPlan,
    saved_plan: tuple[Path, SavedPlan] | None,
    arm: Any,
    backend: StateBackend,
    doc: StateDocument | None,
    secrets: dict[str, dict[str, str]],
    contract: Contract,
) -> tuple[DeploymentPlan, ChangeSet]:
    """Under the lock: the plan to apply (a saved one only if still current) and its change set, refused
    when any of it must not be applied; with --target, the targeted part of the plan."""
    from hpclz.azure.errors import azure_errors
    from hpclz.plan.contract import targeted

    if saved_plan is not None:
        from hpclz.plan.saved import check_saved_plan

        path, saved = saved_plan
        plan = check_saved_plan(saved, path, loaded, doc)  # refuses a plan made against another config or state
    live = None
    if contract.refresh and doc is not None:
        from hpclz.deploy.refresh import read_back

        with azure_errors("reading the recorded resources back from Azure"):
            live = read_back(arm, doc)
    where = (arm.subscription_id, backend.location)
    changes = check_contract(loaded, plan, doc, where, contract, secrets, live)  # the very set confirmed, applied
    from hpclz.deploy.adoption import refuse_takeover, taken_over

    with azure_errors("reading what deploy would create"):
        refuse_takeover(taken_over(arm, changes, plan, doc), str(loaded.file))
    if contract.scope.target:
        plan = targeted(changes, plan, contract.scope.target)
    return plan, changes


def _runner(
    arm: Any,
    plan: DeploymentPlan,
    doc: StateDocument,
    backend: StateBackend,
    secrets: dict[str, dict[str, str]],
    on_event: Callable[[Any], None],
    removals: Any,
    changes: ChangeSet,
) -> Runner:
    from hpclz.deploy.runner import Runner

    return Runner(
        arm,
        plan,
        doc,
        backend.write,
        secrets=secrets,
        on_event=on_event,
        poll_interval=arm.clients.settings.poll_interval,
        deletes=removals.deletes,
        before_submit=removals.before_submit,
        resubmit=changes.resubmit,
    )


def _run(runner: Runner, loaded: LoadedConfig) -> RunResult:
    from hpclz.azure.errors import azure_errors

    try:
        with azure_errors("deploy"):
            return runner.run()
    except KeyboardInterrupt:
        running = sorted(n for n, r in runner.doc.deployments.items() if r.status.value == "running")
        raise HpclzError(
            "interrupted; the state lock is released and "
            + (f"{', '.join(running)} still running in Azure (recorded in state)" if running else "nothing is running")
            + f"; rerun `hpclz deploy {loaded.file}` to resume",
            exit_code=ExitCode.INTERRUPTED,
        ) from None


def _report(result: DeployResult, plan: DeploymentPlan, run: RunResult, final: StateDocument) -> None:
    for d in plan.deployments:
        step = run.status.get(d.name)
        failure = run.failures.get(d.name)
        result.deployments.append(
            DeploymentOutcome(
                name=d.name,
                component=d.component,
                status=step.value if step else "not started",
                error=failure.one_line() if failure else None,
                error_code=failure.code if failure else None,
                blocked_by=run.blocked.get(d.name, []),
            )
        )
    result.outputs = dict(final.outputs)


def _backend(loaded: LoadedConfig, arm: Any) -> StateBackend:
    """The config's state backend; a Blob one signs in with the same credential as ARM."""
    from hpclz.azure.backends import open_backend
    from hpclz.state.renamed import refuse_renamed_zone

    file = Path(loaded.file)
    backend = open_backend(
        loaded.config, base_dir=file.parent, credential=arm.clients.credential, config_file=str(file)
    )
    refuse_renamed_zone(backend, loaded)  # before the lock, which makes the new zone's state folder
    return backend


def _unchanged(plan: DeploymentPlan, backend: StateBackend) -> set[str]:
    """Deployments the state says succeeded with the same template (read without the lock: a hint only)."""
    return unchanged_deployments(plan, backend.read())


def _failing(findings: list[Finding]) -> bool:
    return any(f.severity.at_least(Severity.ERROR) for f in findings)
