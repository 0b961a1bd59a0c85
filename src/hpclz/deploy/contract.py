"""What deploy does around the runner so that it applies exactly the plan: the change set it confirms
and the refusals before the first write (hpclz.plan.contract), the deletes and replacements it carries
out, and what it records afterwards (applied config, secret fingerprints), or nothing for a no-op."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hpclz.config.loader import LoadedConfig
from hpclz.errors import ExitCode, HpclzError
from hpclz.plan.changeset import Action, ChangeSet
from hpclz.plan.contract import Consent, changeset_for, force_replacements, matching, refuse_unsafe
from hpclz.render.model import DeploymentPlan
from hpclz.state.backend import StateBackend
from hpclz.state.fingerprint import SecretFingerprint, fingerprint, same_value
from hpclz.state.guard import SecretGuard
from hpclz.state.identity import ZoneIdentity, refuse_foreign_state
from hpclz.state.model import StateDocument

if TYPE_CHECKING:
    from hpclz.deploy.prune import Removals

Secrets = dict[str, dict[str, str]]


@dataclass(frozen=True)
class Scope:
    """`--replace` and `--target` addresses: full resource IDs or `Type/name`."""

    replace: list[str] = field(default_factory=list)
    target: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Contract:
    """What the engineer allowed and asked for, and what deploy knows of Azure (refresh)."""

    consent: Consent = field(default_factory=Consent)
    scope: Scope = field(default_factory=Scope)
    refresh: bool = True  # read the recorded resources back and put drift back (terraform apply's default)
    refresh_only: bool = False  # record in state what Azure has; write nothing to Azure (`apply -refresh-only`)
    # Interactive consent instead of a flag: shown the reasons and the zone name, True when a person typed it.
    ask: Callable[[list[str], str], bool] | None = None


def check_contract(
    loaded: LoadedConfig,
    plan: DeploymentPlan,
    doc: StateDocument | None,
    where: tuple[str, str],
    contract: Contract,
    secrets: Secrets,
    live: dict[str, Any] | None = None,
    early: bool = False,
) -> ChangeSet:
    """The change set deploy will apply, or HpclzError when any of it must not be applied: another zone's
    state, a NOT ALLOWED change, data loss or disruption without consent, a secret where state would keep it.
    `where`: (the ARM subscription, the state's location)."""
    file = str(loaded.file)
    subscription_id, state_location = where
    # Another zone's (or subscription's) state would make deploy skip what never ran here, and merge two zones.
    refuse_foreign_state(doc, ZoneIdentity.of_config(loaded.config, subscription_id), state_location, file)
    changes = changeset_for(loaded, plan, doc, secrets)
    if live is not None:
        from hpclz.deploy.refresh import attach_drift

        attach_drift(changes, doc, live)
    force_replacements(changes, contract.scope.replace)
    asked = frozenset(r.id.lower() for a in contract.scope.replace for r in matching(changes, a))
    # On the whole change set, targeted or not.
    consent = dataclasses.replace(contract.consent, replace=asked)
    if early:  # before preflight: a person is asked once, under the lock, not here
        refuse_unsafe(changes, consent, file, defer=contract.ask is not None)
    else:
        refuse_unsafe(changes, consent, file, ask=contract.ask)
    refuse_secrets_in_bodies(loaded, plan, secrets)
    return changes


def refuse_secrets_in_bodies(loaded: LoadedConfig, plan: DeploymentPlan, secrets: Secrets) -> None:
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


def new_fingerprints(doc: StateDocument, plan: DeploymentPlan, secrets: Secrets) -> dict[str, SecretFingerprint]:
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


def announce_waits(arm: Any, on_event: Callable[[Any], None]) -> None:
    """Every wait between retries (a throttled call's Retry-After, a backoff) is shown, counting down."""
    from hpclz.deploy.runner import Event, Step

    arm.clients.on_wait = lambda message: on_event(Event("ARM", Step.WAITING, message))


def removals_for(arm: Any, plan: DeploymentPlan, doc: StateDocument, changes: ChangeSet | None) -> Removals:
    from hpclz.deploy.prune import Removals

    resources = changes.changed_resources if changes is not None else []
    return Removals(
        arm,
        plan,
        doc,
        deletes=[r.id for r in resources if r.action is Action.DELETE],
        replaces=[r.id for r in resources if r.action is Action.REPLACE],
    )


def after_run(
    loaded: LoadedConfig,
    plan: DeploymentPlan,
    backend: StateBackend,
    removals: Removals,
    doc: StateDocument,
    secrets: Secrets,
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
