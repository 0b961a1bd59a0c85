"""The plan is the contract: deploy computes the change set exactly as `hpclz plan` does and refuses,
before its first write, whatever the plan marks as unsafe unless the engineer said so explicitly.

| plan says                         | deploy                                                   |
|-----------------------------------|----------------------------------------------------------|
| NOT ALLOWED                       | refused, always (also with --yes, also from a saved plan) |
| replace, or DATA LOSS             | refused without --allow-data-loss                        |
| drain partition / restart nodes   | refused without --allow-disruption (drain first)         |
| in place, create, delete (no data)| applied after the confirmation                           |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hpclz.config.loader import LoadedConfig
from hpclz.errors import ExitCode, HpclzError
from hpclz.plan.changeset import Action, ChangeSet, ConfigChange, Policy, ResourceChange, StateRef, Verdict
from hpclz.plan.config_diff import config_changes, config_snapshot
from hpclz.plan.node_scripts import node_scripts, order
from hpclz.plan.offline import offline_changeset
from hpclz.plan.racks import rack_partitions
from hpclz.plan.upgrade import stack_upgrade
from hpclz.render.model import DeploymentPlan
from hpclz.state.fingerprint import same_value
from hpclz.state.model import StateDocument

DISRUPTIVE = (Policy.DRAIN_PARTITION, Policy.RESTART_NODES)


@dataclass(frozen=True)
class Consent:
    """What the engineer allowed on the command line, beyond an in-place change."""

    data_loss: bool = False
    disruption: bool = False
    replace: frozenset[str] = frozenset()  # lower-cased IDs asked for with --replace: consent for those alone


def changeset_for(
    loaded: LoadedConfig,
    plan: DeploymentPlan,
    state: StateDocument | None,
    secrets: Mapping[str, Mapping[str, str]] | None = None,
) -> ChangeSet:
    """The offline change set with its config-level diff: what `hpclz plan` prints and deploy applies.
    `secrets`: the secure parameter values that could be resolved, to tell rotated ones."""
    changes = offline_changeset(plan, state)
    attach_config_diff(changes, loaded, state)
    if state is not None:
        # `deploy --refresh-only` recorded Azure's values for these: ARM still holds the last deployment of the
        # same template as Succeeded, which deploy would otherwise adopt instead of submitting it again.
        planned = {d.name for d in plan.deployments}
        changes.resubmit += [n for n, r in state.deployments.items() if r.drifted and n in planned]
    if state is not None and secrets:
        attach_rotations(changes, plan, state, secrets, accounting_secret_path(loaded))
    attach_node_scripts(changes, loaded, plan, state)
    changes.unique_labels()
    return changes


def attach_node_scripts(
    changes: ChangeSet, loaded: LoadedConfig, plan: DeploymentPlan, state: StateDocument | None
) -> None:
    """The running nodes that keep scripts other than the ones rendered now, and the steps that replace them; after
    the config diff, whose stack upgrade may replace them anyway."""
    changes.node_scripts = node_scripts(plan, state, rack_partitions(loaded.config))
    order(changes)


ROTATED = Verdict(
    policy=Policy.IN_PLACE,
    reason="the new value is written to Key Vault as a new version of the secret",
    source="https://learn.microsoft.com/azure/key-vault/secrets/about-secrets",
)


# Slurm accounting's password also lives in the running scheduler's slurmdbd.conf, which cyclecloud-slurm writes once
# (hpclz.deploy.storagepass says where): a rotation of that secret does more, and the plan says so.
ROTATED_ACCOUNTING = Verdict(
    policy=Policy.IN_PLACE,
    reason=(
        "the new value is written to Key Vault as a new version of the secret (and, on a server hpclz creates, as the "
        "MySQL server's administrator password); deploy then rewrites StoragePass in the scheduler's slurmdbd.conf "
        "through a managed Run Command and restarts slurmdbd, and hpclz-cluster-sync re-imports the cluster's "
        "AccountingPassword"
    ),
    action_needed=(
        "with compute.accounting mode existing, give slurmdbd's database user the new password on your MySQL server "
        "first: hpclz changes only a server it creates"
    ),
    source="https://learn.microsoft.com/azure/virtual-machines/linux/run-command-managed",
)


def accounting_secret_path(loaded: LoadedConfig) -> str | None:
    """identity.key_vault.secrets.NAME of Slurm accounting's password, when accounting is on."""
    accounting = loaded.config.compute.accounting
    name = getattr(accounting, "password_secret_name", None) if accounting.mode != "disabled" else None
    return f"identity.key_vault.secrets.{name}" if name else None


def attach_rotations(
    changes: ChangeSet,
    plan: DeploymentPlan,
    state: StateDocument,
    secrets: Mapping[str, Mapping[str, str]],
    accounting: str | None = None,
) -> None:
    """A secret whose value no longer matches its fingerprint in state is a change: its deployment is
    submitted again although its template is the same (secret values are not part of the template hash).
    `accounting`: the path of Slurm accounting's password, whose rotation also reaches slurmdbd."""
    for d in plan.deployments:
        for parameter, path in sorted(d.secure_parameters.items()):
            value = secrets.get(d.name, {}).get(parameter)
            recorded = state.secret_fingerprints.get(f"{d.name}/{parameter}")
            if value is None or recorded is None or same_value(recorded, value) is not False:
                continue
            changes.config_changes.append(
                ConfigChange(
                    path=path,
                    kind=Action.MODIFY,
                    before="(sensitive)",
                    after="(sensitive, rotated)",
                    verdict=ROTATED_ACCOUNTING if path == accounting else ROTATED,
                )
            )
            if d.name not in changes.resubmit:
                changes.resubmit.append(d.name)


def attach_config_diff(changes: ChangeSet, loaded: LoadedConfig, state: StateDocument | None) -> None:
    changes.state = StateRef.of(state)
    if state is None or not state.applied_config:
        changes.config_baseline = state is None
        return
    changes.config_changes = config_changes(state.applied_config, loaded.config)
    changes.stack_upgrade = stack_upgrade(
        state.applied_config, config_snapshot(loaded.config), rack_partitions(loaded.config)
    )


def replacements(changes: ChangeSet) -> list[str]:
    """Resources deleted and created again (their data with them, where they hold any)."""
    found = [c.path for c in changes.config_changes if c.verdict.policy in (Policy.REPLACE, Policy.REPLACE_DATA)]
    found += [f"{r.type} {r.name}" for r in changes.changed_resources if r.action is Action.REPLACE]
    return found


def matching(changes: ChangeSet, address: str) -> list[ResourceChange]:
    """The resources an ADDRESS names: a full resource ID, or `Type/name` (case-insensitive)."""
    wanted = address.strip().lower()
    by_id = [r for r in changes.resources if r.id.lower() == wanted]
    return by_id or [r for r in changes.resources if f"{r.type}/{r.name}".lower() == wanted]


def _one(changes: ChangeSet, address: str, flag: str) -> ResourceChange:
    found = matching(changes, address)
    if len(found) != 1:
        what = "no resource" if not found else f"{len(found)} resources"
        raise HpclzError(
            f"{flag} {address}: {what} of this landing zone match; give the full resource ID (`hpclz plan -o json`)",
            exit_code=ExitCode.USAGE,
        )
    return found[0]


def force_replacements(changes: ChangeSet, addresses: Sequence[str]) -> None:
    """`--replace ADDRESS`: the resource is deleted and created again although nothing in it changed."""
    for address in addresses:
        resource = _one(changes, address, "--replace")
        if resource.action is Action.CREATE:
            continue  # not there yet: creating it is all a replacement could do
        resource.action = Action.REPLACE
        resource.verdict = Verdict(
            policy=Policy.REPLACE_DATA if resource.data_bearing else Policy.REPLACE,
            reason="replacement asked for with --replace",
        )
        if resource.deployment not in changes.resubmit:
            changes.resubmit.append(resource.deployment)
    if addresses:  # a replaced CycleCloud server starts every node again as a new VM
        order(changes)


def targeted(changes: ChangeSet, plan: DeploymentPlan, addresses: Sequence[str]) -> DeploymentPlan:
    """`--target ADDRESS`: only the deployments holding those resources, and what they depend on; the change
    set keeps only their resources (other changes wait for a later, untargeted deploy)."""
    named = [_one(changes, a, "--target") for a in addresses]
    changes.targets = [r.id for r in named]
    wanted = {r.deployment for r in named}
    by_name = {d.name: d for d in plan.deployments}
    todo = list(wanted)
    while todo:
        current = by_name.get(todo.pop())
        for dependency in current.depends_on if current else []:
            if dependency not in wanted:
                wanted.add(dependency)
                todo.append(dependency)
    changes.resources = [r for r in changes.resources if r.deployment in wanted]
    changes.drift = [r for r in changes.drift if r.deployment in wanted]
    changes.resubmit = [n for n in changes.resubmit if n in wanted]
    changes.config_changes = []  # a config diff cannot be cut to some deployments: the resources say it
    scripts = changes.node_scripts
    if scripts is not None and not any(r.name.lower() == scripts.server.lower() for r in changes.resources):
        changes.node_scripts = None  # the server's userData, and with it the new scripts, waits for a later deploy
    return plan.model_copy(update={"deployments": [d for d in plan.deployments if d.name in wanted]})


def disruptions(changes: ChangeSet) -> list[str]:
    """What the engineer must do before a drain or restart change, one line each."""
    verdicts = [c.verdict for c in changes.config_changes] + [r.verdict for r in changes.changed_resources]
    needed = {v.action_needed or v.reason for v in verdicts if v.policy in DISRUPTIVE}
    return sorted(n for n in needed if n)


def refusals(changes: ChangeSet, consent: Consent) -> list[str]:
    """Why this change set must not be applied as allowed; empty when it may."""
    reasons = []
    if changes.blocked:
        reasons.append(f"NOT ALLOWED: {', '.join(changes.blocked)}")
    asked = {f"{r.type} {r.name}" for r in changes.resources if r.id.lower() in consent.replace and not r.data_bearing}
    risky = sorted((set(changes.data_loss) | set(replacements(changes))) - asked)
    if risky and not consent.data_loss:
        reasons.append(f"replaces or deletes data ({', '.join(risky)}): pass --allow-data-loss once it is safe")
    if disruptions(changes) and not consent.disruption and not changes.blocked:
        reasons.append(
            f"disrupts running nodes ({'; '.join(disruptions(changes))}): do that first, then pass --allow-disruption"
        )
    return reasons


def refuse_unsafe(
    changes: ChangeSet,
    consent: Consent,
    file: str,
    ask: Callable[[list[str], str], bool] | None = None,
    defer: bool = False,
) -> None:
    """Raise unless the change set may be applied. A refusal a flag could lift may instead be lifted by a person
    who types the zone's name when `ask`ed (never a NOT ALLOWED one); `defer`: an early check that leaves those
    to the check that asks."""
    reasons = refusals(changes, consent)
    if not reasons:
        return
    if not changes.blocked and (defer or (ask is not None and ask(reasons, zone_name(changes)))):
        return
    raise HpclzError(
        f"{file}: refusing to deploy, nothing was changed: {'; '.join(reasons)}",
        exit_code=ExitCode.FAILED,
        hint=f"`hpclz plan {file}` shows each change and what it costs",
    )


def zone_name(changes: ChangeSet) -> str:
    return f"{changes.landing_zone}-{changes.environment}"
