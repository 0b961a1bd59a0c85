"""`hpclz plan` after validation: render the config, compare it with the last applied state (or ask ARM what-if),
and say what an apply would do and cost. Optionally save the plan for `hpclz deploy --plan`."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from hpclz.catalog.quota import QuotaNeed, quota_needs
from hpclz.catalog.skus import load_catalog
from hpclz.config.loader import LoadedConfig
from hpclz.config.root import LandingZoneConfig
from hpclz.cost.estimate import Estimate, estimate, with_delta
from hpclz.errors import ExitCode, HpclzError
from hpclz.findings import Finding, Severity
from hpclz.output import ResultBody
from hpclz.plan.changeset import ChangeSet, StateRef
from hpclz.plan.cluster import cluster_lines
from hpclz.plan.contract import attach_config_diff, attach_node_scripts, changeset_for, force_replacements, targeted
from hpclz.plan.offline import create_change
from hpclz.plan.racks import PartitionRacks, partition_racks
from hpclz.plan.resources import deployment_resources, desired_resources
from hpclz.plan.saved import save_plan
from hpclz.render.model import DeploymentPlan, Scope
from hpclz.state.identity import ZoneIdentity, refuse_foreign_state
from hpclz.state.model import StateDocument

log = logging.getLogger(__name__)


class PlanResult(ResultBody):
    file: str
    changes: ChangeSet | None = None
    findings: list[Finding] = Field(default_factory=list)
    state_location: str = ""
    saved_to: str | None = None
    not_saved: str | None = Field(default=None, description="Why `--out` wrote no plan file.")
    detailed_exitcode: bool = False
    estimate: Estimate | None = Field(default=None, description="Monthly cost estimate (hpclz.cost).")
    racks: list[PartitionRacks] = Field(default_factory=list, description="Rack-scale partitions in NVLink domains.")
    quota: list[QuotaNeed] = Field(
        default_factory=list,
        description="vCPUs per quota family with every node running, against compute.quotas (and, where plan read "
        "Azure, the live limit and use).",
    )
    live_checked: bool = Field(
        default=False, description="The region's SKUs and the vCPU usage were read from Azure (plan read Azure)."
    )

    def exit_code(self) -> ExitCode:
        if self.changes is None or self.changes.blocked or any(f.severity is Severity.ERROR for f in self.findings):
            return ExitCode.FAILED
        if any(f.severity is Severity.ERROR for f in self.findings):  # a live check (a size the region lacks)
            return ExitCode.FAILED
        if self.detailed_exitcode and self.changes.has_changes:
            return ExitCode.CHANGES_PRESENT
        return ExitCode.OK

    def json_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "file": self.file,
            "state_location": self.state_location,
            "saved_to": self.saved_to,
            "not_saved": self.not_saved,
        }
        if self.changes is not None:
            body.update(self.changes.payload())
        if self.estimate is not None:
            body["cost_estimate"] = self.estimate.payload()
        if self.racks:
            body["racks"] = [r.model_dump() for r in self.racks]
        body["quota"] = [{**q.model_dump(mode="json"), "short": q.short, "left": q.left} for q in self.quota]
        body["live_checked"] = self.live_checked
        return body


@dataclass(frozen=True)
class PlanOptions:
    config: Path
    what_if: bool = False
    out: str | Path | None = None
    force: bool = False  # --out may overwrite a file that is not a saved plan (hpclz.outfile)
    detailed_exitcode: bool = False
    suppress: tuple[str, ...] = ()
    refresh: bool = True  # terraform's default: read what state records back from Azure (--refresh=false: offline)
    refresh_only: bool = False
    destroy: bool = False
    include_data: bool = False
    replace: tuple[str, ...] = ()
    target: tuple[str, ...] = ()
    hours: float | None = None  # monthly hours for the cost estimate (hpclz.cost); None: its default
    offline: bool = False  # read nothing from the network: no retail prices, no Azure (implies refresh=False)
    prices_endpoint: str | None = None  # the Retail Prices API (hpclz.cost.retail.ENDPOINT when None)


def contradictions(options: PlanOptions) -> list[str]:
    """Flag sets that ask for two plans at once, or for a part no plan of theirs has."""
    found = []
    if options.refresh_only and options.destroy:
        found.append("--refresh-only shows drift and --destroy shows deletes: pick one")
    if options.refresh_only and not options.refresh:
        found.append("--refresh-only reads Azure, --refresh=false forbids it")
    if options.destroy and (options.replace or options.target):
        found.append("--destroy deletes everything the zone owns: it takes no --replace or --target")
    if options.destroy and not options.refresh:
        found.append("--destroy reads Azure to prove what the zone owns: it takes no --refresh=false")
    if options.include_data and not options.destroy:
        found.append("--include-data only applies with --destroy")
    return found


def refuse_contradictions(options: PlanOptions) -> None:
    found = contradictions(options)
    if found:
        raise HpclzError(f"contradictory flags: {found[0]}; nothing was planned", exit_code=ExitCode.USAGE)


def planned(loaded: LoadedConfig, options: PlanOptions, findings: list[Finding]) -> PlanResult:
    """The plan of a loaded config whose validation gave `findings` (any error: no plan worth showing)."""
    from hpclz.azure.backends import open_backend
    from hpclz.render.build import build_plan
    from hpclz.state.renamed import refuse_renamed_zone

    if options.offline and (options.what_if or options.refresh_only):
        flag = "--what-if" if options.what_if else "--refresh-only"
        raise HpclzError(f"--offline and {flag} contradict: {flag} reads Azure; drop one of them")
    path = options.config
    result = PlanResult(file=str(path), detailed_exitcode=options.detailed_exitcode, findings=findings)
    if any(f.severity is Severity.ERROR for f in result.findings):
        return result
    deployment_plan = build_plan(loaded.config)
    backend = open_backend(loaded.config, base_dir=Path(path).resolve().parent, config_file=str(path))
    result.state_location = backend.location
    refuse_renamed_zone(backend, loaded)
    state = backend.read()
    # The region is compared by the config diff (NOT ALLOWED), which says more than a refusal would.
    refuse_foreign_state(
        state, ZoneIdentity.of_config(loaded.config), backend.location, str(path), check_location=False
    )
    if options.destroy:
        owner = _ownership(loaded, deployment_plan, state)
        result.changes = destroy_changeset(deployment_plan, state, options.include_data, owner)
        result.changes.entra = _entra(loaded, state, options, read=True)
        result.not_saved = "not saved: a destroy plan is applied with `hpclz destroy`" if options.out else None
        return result
    log.info(
        "planning against %s: %s",
        f"state serial {state.serial}" if state else "no state",
        "ARM what-if" if options.what_if else "offline" if options.offline or not options.refresh else "refresh",
    )
    result.changes = _changes(loaded, deployment_plan, state, options)
    if not options.refresh_only:  # a refresh-only plan changes nothing, in Entra ID either
        result.changes.entra = _entra(loaded, state, options, read=reads_azure(options, state))
    if options.what_if:  # online: what deploy's preflight would refuse before any write, said now
        from hpclz.deploy.preflight import marketplace_findings

        result.findings += marketplace_findings(_arm(loaded), loaded, deployment_plan, options.suppress)
    result.estimate = _estimate(loaded, deployment_plan, state, options)
    result.racks = partition_racks(loaded.config)
    result.quota = quota_needs(loaded.config, load_catalog())
    if reads_azure(options, state):
        _live(result, loaded, deployment_plan, options)
    _save(result, options, deployment_plan, loaded, state)
    return result


def reads_azure(options: PlanOptions, state: StateDocument | None) -> bool:
    """Whether this plan reads Azure anyway (what-if, or the refresh of what state records): then it also reads the
    region's SKUs and the subscription's vCPU usage. A plan of a zone not deployed yet stays credential-free."""
    if options.offline:
        return False
    return options.what_if or options.refresh_only or (options.refresh and state is not None and bool(state.resources))


def _entra(loaded: LoadedConfig, state: StateDocument | None, options: PlanOptions, *, read: bool) -> Any:
    """The app role assignments deploy (or destroy) changes in CycleCloud's Entra app; Microsoft Graph is read only
    where the plan reads Azure anyway (`read`), as ARM is."""
    from hpclz.deploy.plan_app_roles import planned_grant, planned_revoke

    graph = _graph(loaded) if read and not options.offline else None
    return planned_revoke(state, graph) if options.destroy else planned_grant(loaded, state, graph)


def _graph(loaded: LoadedConfig) -> Any:
    """Microsoft Graph with the credential every ARM client of this plan gets (hpclz.deploy.apply does the same)."""
    from hpclz.azure.clients import make_credential
    from hpclz.azure.graph import Graph
    from hpclz.azure.settings import settings_from_env

    settings = settings_from_env(loaded.config.metadata.cloud)
    return Graph(settings, make_credential(settings))


def _live(result: PlanResult, loaded: LoadedConfig, deployment_plan: DeploymentPlan, options: PlanOptions) -> None:
    from hpclz.deploy.plan_live import live_compute, with_live_quota

    found, usages = live_compute(_arm(loaded), loaded, deployment_plan.location, options.suppress)
    result.findings = [*result.findings, *found]
    result.live_checked = True
    if usages is not None:
        with_live_quota(result.quota, usages)


def _estimate(
    loaded: LoadedConfig, deployment_plan: DeploymentPlan, state: StateDocument | None, options: PlanOptions
) -> Estimate:
    from hpclz.cost.retail import current_prices

    book, note = current_prices(loaded.config, offline=options.offline, endpoint=options.prices_endpoint)
    kinds = Counter(r.type for r in desired_resources(deployment_plan))
    current = estimate(loaded.config, hours=options.hours, book=book, kinds=kinds)
    current.prices_note = note
    return with_delta(current, applied_config(state))


def _changes(
    loaded: LoadedConfig, deployment_plan: DeploymentPlan, state: StateDocument | None, options: PlanOptions
) -> ChangeSet:
    if options.what_if:
        changes = online_changeset(loaded, deployment_plan)
        attach_config_diff(changes, loaded, state)
        attach_node_scripts(changes, loaded, deployment_plan, state)
    else:
        from hpclz.deploy.secrets import available_secrets

        changes = changeset_for(loaded, deployment_plan, state, available_secrets(loaded, deployment_plan))
    # What-if already compares with Azure as it is; a second read would list the same drift twice.
    if options.refresh_only or (options.refresh and not options.what_if and not options.offline):
        refresh_changeset(loaded, changes, state, only=options.refresh_only)
    changes.cluster = cluster_lines(loaded.config, changes)
    changes.unique_labels()
    force_replacements(changes, options.replace)
    if options.target:
        targeted(changes, deployment_plan, options.target)
    return changes


def _save(
    result: PlanResult,
    options: PlanOptions,
    deployment_plan: DeploymentPlan,
    loaded: LoadedConfig,
    state: StateDocument | None,
) -> None:
    """Write the plan for `deploy --plan`, unless it could never be applied as it stands."""
    changes = result.changes
    if options.out is None or changes is None:
        return
    if options.refresh_only:
        result.not_saved = "not saved: a --refresh-only plan changes nothing"
    elif options.replace or options.target:
        result.not_saved = "not saved: pass the same --replace/--target to `hpclz deploy` instead"
    elif changes.blocked:
        # A saved plan is a promise that deploy can apply it; one with a NOT ALLOWED change cannot be kept.
        blocked = ", ".join(changes.blocked)
        result.not_saved = f"not saved to {options.out}: it holds changes that are not allowed ({blocked})"
    else:
        save_plan(options.out, deployment_plan, changes, loaded.config, state)
        result.saved_to = str(options.out)


def applied_config(state: StateDocument | None) -> LandingZoneConfig | None:
    """The config of the last apply, as a model; None when there is none or it no longer validates."""
    if state is None or not state.applied_config:
        return None
    try:
        return LandingZoneConfig.model_validate(state.applied_config)
    except ValueError:
        return None  # an older schema: the estimate shows no delta rather than a wrong one


def refresh_changeset(loaded: LoadedConfig, changes: ChangeSet, state: Any, *, only: bool = False) -> None:
    """Read the recorded resources back from Azure and add what drifted (`only`: nothing but the drift)."""
    if state is None or not state.resources:
        changes.refreshed = True  # nothing recorded, nothing to read: no credentials needed
        return
    from hpclz.azure.errors import azure_errors
    from hpclz.deploy.refresh import attach_drift, read_back

    try:
        with azure_errors(f"refresh: reading the {len(state.resources)} resources recorded in state back from Azure"):
            live = read_back(_arm(loaded), state)
    except HpclzError as exc:
        raise HpclzError(
            f"{exc.message if exc.message.startswith('refresh') else f'refresh: {exc.message}'}; or pass --refresh=false to plan against the recorded state only, without Azure",
            exit_code=exc.exit_code,
            hint=exc.hint,
        ) from None
    if only:
        changes.resources, changes.config_changes, changes.resubmit = [], [], []
    attach_drift(changes, state, live)


def _ownership(loaded: LoadedConfig, deployment_plan: DeploymentPlan, state: StateDocument | None) -> Any:
    """What proves the zone owns each record, read from Azure as destroy reads it (hpclz.deploy.ownership)."""
    if state is None or not state.resources:
        return None
    from hpclz.deploy.ownership import Ownership

    return Ownership(_arm(loaded), state, list(deployment_plan.deployments))


def destroy_changeset(plan: DeploymentPlan, state: Any, include_data: bool, owner: Any = None) -> ChangeSet:
    """What `hpclz destroy` would delete: every recorded resource the zone proves it owns (`owner`, an
    hpclz.deploy.ownership.Ownership), less the data it keeps (and what that data stands on) unless include_data.
    The rest is listed in `left_alone` with the reason; one Azure no longer has is not listed."""
    from hpclz.azure.errors import azure_errors
    from hpclz.deploy.destroy import kept_set
    from hpclz.plan.offline import delete_change

    changes = ChangeSet(
        mode="destroy", landing_zone=plan.landing_zone, environment=plan.environment, state=StateRef.of(state)
    )
    if state is None:
        return changes
    kept = kept_set(state.resources, include_data)
    for r in state.resources:
        if r.id.lower() in kept:
            continue
        if owner is not None:
            with azure_errors("plan --destroy: reading the recorded resources' ownership from Azure"):
                refused = owner.refusal(r)
            if refused == "not found":
                continue
            if refused:
                changes.left_alone.append(f"{r.id}: {refused}")
                continue
        changes.resources.append(delete_change(r))
    changes.refreshed = owner is not None
    return changes


def _arm(loaded: LoadedConfig) -> Any:
    from hpclz.azure.arm import Arm
    from hpclz.azure.clients import AzureClients, resolve_subscription
    from hpclz.azure.settings import settings_from_env

    metadata = loaded.config.metadata
    return Arm(
        AzureClients(resolve_subscription(metadata.resolved_subscription_id()), settings_from_env(metadata.cloud))
    )


def online_changeset(loaded: LoadedConfig, deployment_plan: DeploymentPlan) -> ChangeSet:
    """ARM what-if per deployment; a deployment whose resource group does not exist yet is all creates
    (what-if cannot run into a missing group, and everything in it is new anyway)."""
    from hpclz.azure.arm import Arm, deployment_body
    from hpclz.azure.clients import AzureClients, resolve_subscription
    from hpclz.azure.errors import azure_errors
    from hpclz.azure.settings import settings_from_env
    from hpclz.deploy.secrets import resolve_secrets
    from hpclz.deploy.wheel_step import prepare, with_wheel
    from hpclz.plan.whatif import whatif_changeset

    # ARM validates a what-if like a deployment: secureString parameters must have values. They go to
    # ARM in the request only; ARM never echoes them in the result, and nothing here prints them. The hpclz wheel
    # deploy would pass goes too, so an unchanged wheel is no change (the CycleCloud VM's hpclz-wheel tag).
    secrets = with_wheel(deployment_plan, resolve_secrets(loaded, deployment_plan), prepare(deployment_plan))
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
                results[d.name] = arm.what_if(d, deployment_body(d, secrets.get(d.name, {}), {}))
    changes = whatif_changeset(
        results, landing_zone=deployment_plan.landing_zone, environment=deployment_plan.environment
    )
    known = {r.id.lower() for r in changes.resources}
    for d in missing:
        changes.resources += [
            create_change(r) for r in deployment_resources(d, subscription) if r.id.lower() not in known
        ]
    return changes
