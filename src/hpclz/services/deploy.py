"""`hpclz deploy`: validate, render, preflight against Azure, then apply the plan under the state lock."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, SecretStr

from hpclz.config.loader import LoadedConfig, load_config
from hpclz.errors import ExitCode, HpclzError
from hpclz.findings import Finding, Severity
from hpclz.plan.changeset import ChangeSet
from hpclz.plan.contract import Consent, changeset_for, force_replacements, matching, refuse_unsafe, targeted
from hpclz.render.model import DeploymentPlan
from hpclz.state.backend import StateBackend
from hpclz.state.fingerprint import SecretFingerprint, fingerprint, same_value
from hpclz.state.guard import ENV_REFERENCE, SecretGuard
from hpclz.state.identity import ZoneIdentity, refuse_foreign_state
from hpclz.state.model import StateDocument

if TYPE_CHECKING:
    from hpclz.deploy.prune import Removals
    from hpclz.plan.saved import SavedPlan


class DeploymentOutcome(BaseModel):
    name: str
    component: str
    status: str
    error: str | None = None
    blocked_by: list[str] = Field(default_factory=list)


class DeployResult(BaseModel):
    file: str
    stage: str = Field(description="How far it got: validate, preflight, confirm, deploy.")
    findings: list[Finding] = Field(default_factory=list)
    changes: ChangeSet | None = Field(default=None, description="The change set shown before confirming.")
    deployments: list[DeploymentOutcome] = Field(default_factory=list)
    outputs: dict[str, Any] = Field(default_factory=dict)
    next_steps: list[str] = Field(default_factory=list)
    removed: list[dict[str, Any]] = Field(
        default_factory=list, description="Deletes carried out for the change set: id, type, action, reason."
    )
    state_location: str | None = None
    exit_code: ExitCode = ExitCode.OK

    @property
    def ok(self) -> bool:
        return self.exit_code == ExitCode.OK

    def payload(self) -> dict[str, Any]:
        body = self.model_dump(mode="json", exclude={"findings", "exit_code", "changes"})
        body["changes"] = self.changes.payload() if self.changes is not None else None
        return body


def render_plan(loaded: LoadedConfig, saved: SavedPlan | None) -> DeploymentPlan:
    """The plan to preflight: rendered from the config, or the one saved by `hpclz plan --out` (`--plan`).

    A saved plan is read once: the copy preflighted here is the copy checked against the config and the
    state under the lock (`_apply`) and applied, even if the file is replaced in between.
    """
    if saved is not None:
        return saved.plan
    from hpclz.render.build import build_plan

    return build_plan(loaded.config)


def _secret_at(loaded: LoadedConfig, path: str) -> str:
    node: Any = loaded.config
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else getattr(node, part, None)
        if node is None:
            raise HpclzError(
                f"{loaded.file}: {path}: secret not found in the config", exit_code=ExitCode.CONFIG_INVALID
            )
    value = node.get_secret_value() if isinstance(node, SecretStr) else str(node)
    ref = ENV_REFERENCE.match(value)
    if ref:
        if ref.group(1) not in os.environ:
            raise HpclzError(
                f"{loaded.file}: {path}: environment variable {ref.group(1)} is not set",
                exit_code=ExitCode.CONFIG_INVALID,
            )
        return os.environ[ref.group(1)]
    return value


def resolve_secrets(loaded: LoadedConfig, plan: DeploymentPlan) -> dict[str, dict[str, str]]:
    """secureString values per deployment, read only now, held only in memory."""
    return {d.name: {p: _secret_at(loaded, path) for p, path in d.secure_parameters.items()} for d in plan.deployments}


def available_secrets(loaded: LoadedConfig, plan: DeploymentPlan) -> dict[str, dict[str, str]]:
    """The secret values that can be read now (plan runs without them; an unset `${env:...}` is skipped)."""
    found: dict[str, dict[str, str]] = {}
    for d in plan.deployments:
        for parameter, path in d.secure_parameters.items():
            try:
                found.setdefault(d.name, {})[parameter] = _secret_at(loaded, path)
            except HpclzError:
                continue
    return found


def new_fingerprints(
    doc: StateDocument, plan: DeploymentPlan, secrets: dict[str, dict[str, str]]
) -> dict[str, SecretFingerprint]:
    """Fingerprints of the secrets just deployed: an unchanged value keeps its old one (a no-op deploy
    must not rewrite state), a new or rotated value gets a new salt."""
    planned = {d.name for d in plan.deployments}
    out = {k: v for k, v in doc.secret_fingerprints.items() if k.split("/", 1)[0] not in planned}
    for d in plan.deployments:
        for parameter, value in sorted(secrets.get(d.name, {}).items()):
            key = f"{d.name}/{parameter}"
            recorded = doc.secret_fingerprints.get(key)
            out[key] = recorded if recorded and same_value(recorded, value) else fingerprint(value)
    return out


def _private_ip(doc: StateDocument, vm_name: str) -> str | None:
    for nic in (r for r in doc.resources if r.type.lower() == "microsoft.network/networkinterfaces"):
        if vm_name.removeprefix("vm-") not in nic.name:
            continue
        for config in nic.properties.get("ipConfigurations") or []:
            address = (config.get("properties") or {}).get("privateIPAddress")
            if isinstance(address, str) and not address.startswith("["):
                return address
    return None


def next_steps(loaded: LoadedConfig, doc: StateDocument) -> list[str]:
    """What users need next: where the scheduler is, how to reach it through Bastion, how to verify."""
    config = loaded.config
    steps: list[str] = []
    for key, value in sorted(doc.outputs.items()):
        if "scheduler" in key.lower() and any(w in key.lower() for w in ("ip", "address", "host")):
            steps.append(f"Scheduler address: {value}")
    vms = [r for r in doc.resources if r.type.lower() == "microsoft.compute/virtualmachines"]
    # CycleCloud's server VM runs the Slurm scheduler; hpclz names it vm-<zone>-cc-... .
    target = next((r for r in vms if "-cc-" in r.name or "sched" in r.name.lower()), vms[0] if vms else None)
    if target is not None and not steps:
        group = target.id.split("/")[4]
        address = _private_ip(doc, target.name)
        steps.append(
            f"Scheduler address: {address}"
            if address
            else f"Scheduler address: az vm list-ip-addresses --resource-group {group} --name {target.name} -o table"
        )
    bastion = next((r for r in doc.resources if r.type.lower() == "microsoft.network/bastionhosts"), None)
    if bastion is not None:
        group = bastion.id.split("/")[4]
        target_id = target.id if target else "<scheduler VM resource ID>"
        steps.append(
            "Connect through Bastion: az network bastion ssh "
            f"--name {bastion.name} --resource-group {group} --target-resource-id {target_id} "
            f"--auth-type ssh-key --username {config.identity.admin_username} --ssh-key ~/.ssh/id_ed25519"
        )
    steps.append(f"Verify the cluster: hpclz verify {loaded.file}")
    return steps


def deploy(
    path: str | Path,
    *,
    plan_file: Path | None = None,
    confirm: Confirm = lambda plan, doc, changes: True,
    on_event: Callable[[Any], None] = lambda e: None,
    suppress: Iterable[str] = (),
    consent: Consent = Consent(),
    refresh: bool = False,
    replace: list[str] | None = None,
    target: list[str] | None = None,
) -> DeployResult:
    from hpclz.services.validate import check_config

    loaded = load_config(path)
    result = DeployResult(file=str(path), stage="validate")
    result.findings, _ = check_config(loaded, suppress)
    if _failing(result.findings):
        result.exit_code = ExitCode.FAILED
        return result
    saved = None
    if plan_file is not None:
        from hpclz.plan.saved import read_saved_plan

        saved = read_saved_plan(plan_file)
    plan = render_plan(loaded, saved)
    secrets = resolve_secrets(loaded, plan)

    from hpclz.azure.arm import Arm
    from hpclz.azure.clients import AzureClients, resolve_subscription
    from hpclz.azure.settings import settings_from_env
    from hpclz.deploy.preflight import preflight

    metadata = loaded.config.metadata
    arm = Arm(
        AzureClients(resolve_subscription(metadata.resolved_subscription_id()), settings_from_env(metadata.cloud))
    )
    result.stage = "preflight"
    _announce_waits(arm, on_event)
    backend = _backend(loaded, arm)
    # Everything that can refuse does so before preflight's first call; `_apply` checks again under the lock.
    scope = Scope(replace or [], target or [])
    check_contract(loaded, plan, backend.read(), arm.subscription_id, backend.location, consent, secrets, scope=scope)
    result.findings += preflight(arm, loaded, plan, secrets, suppress, unchanged=_unchanged(plan, backend))
    if _failing(result.findings):
        result.exit_code = ExitCode.FAILED
        return result
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
        consent,
        refresh or bool(saved and saved.changes.get("refreshed")),
        scope,
    )


Confirm = Callable[[DeploymentPlan, StateDocument | None, ChangeSet], bool]


@dataclass(frozen=True)
class Scope:
    """`--replace` and `--target` addresses: full resource IDs or `Type/name`."""

    replace: list[str] = field(default_factory=list)
    target: list[str] = field(default_factory=list)


def check_contract(
    loaded: LoadedConfig,
    plan: DeploymentPlan,
    doc: StateDocument | None,
    subscription_id: str,
    state_location: str,
    consent: Consent,
    secrets: dict[str, dict[str, str]],
    live: dict[str, Any] | None = None,
    scope: Scope | None = None,
) -> ChangeSet:
    """The change set deploy will apply, or HpclzError when any of it must not be applied: another zone's
    state, a NOT ALLOWED change, data loss or disruption without consent, a secret where state would keep it."""
    file = str(loaded.file)
    # Another zone's (or subscription's) state would make deploy skip what never ran here, and merge two zones.
    refuse_foreign_state(doc, ZoneIdentity.of_config(loaded.config, subscription_id), state_location, file)
    changes = changeset_for(loaded, plan, doc, secrets)
    if live is not None:
        from hpclz.deploy.refresh import attach_drift

        attach_drift(changes, doc, live)
    scope = scope or Scope()
    force_replacements(changes, scope.replace)
    asked = frozenset(r.id.lower() for a in scope.replace for r in matching(changes, a))
    refuse_unsafe(changes, dataclasses.replace(consent, replace=asked), file)  # on the whole set, targeted or not
    refuse_secrets_in_bodies(loaded, plan, secrets)
    return changes


def refuse_secrets_in_bodies(loaded: LoadedConfig, plan: DeploymentPlan, secrets: dict[str, dict[str, str]]) -> None:
    """State records each resource's rendered body: a secret in one (a tag value, a literal property) would be
    refused by the state guard only after ARM had created it, so the same guard reads the bodies first."""
    from hpclz.plan.resources import desired_resources
    from hpclz.state.errors import SecretInStateError

    guard = SecretGuard.for_config(loaded.config)
    for deployment, values in secrets.items():
        for name, value in values.items():
            guard.add(f"{deployment} parameter {name}", value)
    for resource in desired_resources(plan):
        try:
            guard.check(resource.body, f"for {resource.type} {resource.name}")
        except SecretInStateError as exc:
            raise HpclzError(
                f"{loaded.file}: refusing to deploy, nothing was changed: {exc}", exit_code=ExitCode.CONFIG_INVALID
            ) from None


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
    consent: Consent,
    refresh: bool = False,
    scope: Scope | None = None,
) -> DeployResult:
    from hpclz.azure.errors import azure_errors
    from hpclz.deploy.destroy import outcome_dict
    from hpclz.deploy.prune import failures
    from hpclz.deploy.runner import Runner
    from hpclz.state.factory import new_state

    result.state_location = backend.location
    with backend.lock("deploy"):
        doc = backend.read()
        if saved_plan is not None:
            from hpclz.plan.saved import check_saved_plan

            path, saved = saved_plan
            plan = check_saved_plan(saved, path, loaded, doc)  # refuses a plan made against another config or state
        live = None
        if refresh and doc is not None:
            from hpclz.deploy.refresh import read_back

            with azure_errors("reading the recorded resources back from Azure"):
                live = read_back(arm, doc)
        # The very change set confirmed and applied.
        result.changes = check_contract(
            loaded, plan, doc, arm.subscription_id, backend.location, consent, secrets, live, scope
        )
        if scope and scope.target:
            plan = targeted(result.changes, plan, scope.target)
        result.stage = "confirm"
        if not confirm(plan, doc, result.changes):
            result.exit_code = ExitCode.INTERRUPTED
            return result
        result.stage = "deploy"
        doc = doc or backend.write(new_state(loaded.config))
        removals = _removals(arm, plan, doc, result.changes)
        runner = Runner(
            arm,
            plan,
            doc,
            backend.write,
            secrets=secrets,
            on_event=on_event,
            poll_interval=arm.clients.settings.poll_interval,
            deletes=removals.deletes,
            resubmit=result.changes.resubmit if result.changes else (),
            before_submit=removals.before_submit,
        )
        try:
            with azure_errors("deploy"):
                run = runner.run()
        except KeyboardInterrupt:
            running = sorted(n for n, r in runner.doc.deployments.items() if r.status.value == "running")
            raise HpclzError(
                "interrupted; the state lock is released and "
                + (
                    f"{', '.join(running)} still running in Azure (recorded in state)"
                    if running
                    else "nothing is running"
                )
                + f"; rerun `hpclz deploy {loaded.file}` to resume",
                exit_code=ExitCode.INTERRUPTED,
            ) from None
        final = runner.doc
        if run.ok:
            final = _after_run(loaded, plan, backend, removals, final, secrets, bool(scope and scope.target))
        result.removed = [outcome_dict(o) for o in removals.outcomes]
        if failures(removals.outcomes):
            result.exit_code = ExitCode.AZURE_ERROR
    for d in plan.deployments:
        step = run.status.get(d.name)
        failure = run.failures.get(d.name)
        result.deployments.append(
            DeploymentOutcome(
                name=d.name,
                component=d.component,
                status=step.value if step else "not started",
                error=failure.one_line() if failure else None,
                blocked_by=run.blocked.get(d.name, []),
            )
        )
    result.outputs = dict(final.outputs)
    if run.ok and result.exit_code is ExitCode.OK:
        result.next_steps = next_steps(loaded, final)
    elif not run.ok:
        result.exit_code = ExitCode.INTERRUPTED if run.interrupted else ExitCode.AZURE_ERROR
    return result


def _announce_waits(arm: Any, on_event: Callable[[Any], None]) -> None:
    """Every wait between retries (a throttled call's Retry-After, a backoff) is shown, counting down."""
    from hpclz.deploy.runner import Event, Step

    arm.clients.on_wait = lambda message: on_event(Event("ARM", Step.WAITING, message))


def _removals(arm: Any, plan: DeploymentPlan, doc: StateDocument, changes: ChangeSet | None) -> Removals:
    from hpclz.deploy.prune import Removals
    from hpclz.plan.changeset import Action

    resources = changes.changed_resources if changes is not None else []
    return Removals(
        arm,
        plan,
        doc,
        deletes=[r.id for r in resources if r.action is Action.DELETE],
        replaces=[r.id for r in resources if r.action is Action.REPLACE],
    )


def _after_run(
    loaded: LoadedConfig,
    plan: DeploymentPlan,
    backend: StateBackend,
    removals: Removals,
    doc: StateDocument,
    secrets: dict[str, dict[str, str]],
    partial: bool = False,
) -> StateDocument:
    """Deletes after every create and update; then the applied config, unless nothing at all changed (a no-op
    deploy leaves the state, its serial included, as it was, so saved plans stay current). A `--target`ed
    deploy applied part of the config only: the applied config stays the baseline it was."""
    from hpclz.plan.config_diff import config_snapshot  # the baseline of `hpclz plan`'s config diff

    final = removals.after_run(doc)
    applied: dict[str, Any] = {"secret_fingerprints": new_fingerprints(final, plan, secrets)}
    if not partial:
        applied.update(
            config_hash=plan.config_hash, applied_config=config_snapshot(loaded.config), location=plan.location
        )
    updated = final.model_copy(update=applied)
    if updated.model_dump(exclude={"updated_at"}) == doc.model_dump(exclude={"updated_at"}):
        return doc
    return backend.write(updated)


def _backend(loaded: LoadedConfig, arm: Any) -> StateBackend:
    """The config's state backend; a Blob one signs in with the same credential as ARM."""
    from hpclz.deploy.backends import open_backend

    file = Path(loaded.file)
    return open_backend(loaded.config, base_dir=file.parent, credential=arm.clients.credential, config_file=str(file))


def _unchanged(plan: DeploymentPlan, backend: StateBackend) -> set[str]:
    """Deployments the state says succeeded with the same template (read without the lock: a hint only)."""
    doc = backend.read()
    return {
        d.name for d in plan.deployments if doc is not None and doc.applied(d.name, d.template_hash(), d.resource_group)
    }


def _failing(findings: list[Finding]) -> bool:
    return any(f.severity.at_least(Severity.ERROR) for f in findings)
