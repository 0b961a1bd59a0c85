"""Config-level diff: which fields changed since the last apply, and what each change costs.

The baseline is `StateDocument.applied_config`, the config as plain data with secrets redacted
(`config_snapshot`). A field's cost is its `update_policy` metadata in the config model
(`hpclz.config.base.policy`); a few fields get a sharper verdict from the same evaluators the
resource table uses (growing an address space is in place, shrinking it is not). Lists of named
items (partitions, volumes, containers, NSG rules) are matched by name, never by index.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

from hpclz.config.base import UPDATE_POLICY
from hpclz.config.root import LandingZoneConfig
from hpclz.plan import policies, server_rebuild
from hpclz.plan.changeset import Action, ConfigChange, Policy, Verdict
from hpclz.plan.racks import rack_partitions, rack_replacement
from hpclz.plan.upgrade import annotate, stack_upgrade

TAG_KEYS = ("mode", "backend")
_NEW_LZ = "create a new landing zone (new config and state) and move workloads to it"

# Fields whose cost depends on the values, not just on the field.
EVALUATORS: dict[str, policies.Evaluate] = {
    "network.vnet.address_space": policies.address_space_verdict,
    "network.bastion.sku": policies.bastion_sku_verdict,
    "identity.key_vault.purge_protection": policies.purge_protection_verdict,
    "storage.lustre.capacity_tib": policies.lustre_capacity_verdict,
    "storage.blob.replication": lambda old, new, _ctx: policies.storage_sku_verdict(
        f"Standard_{old}", f"Standard_{new}"
    ),
}

# What removing a named list item costs ({name} is the item); adding one is in place.
ITEM_REMOVED: dict[str, tuple[Policy, str, str]] = {
    "compute.partitions": (
        Policy.DRAIN_PARTITION,
        "partition {name} and its nodearray are deleted",
        "drain partition {name} and let its jobs finish first",
    ),
    "storage.netapp.volumes": (Policy.REPLACE_DATA, "volume {name} and its files are deleted", "copy the data off"),
    "storage.blob.containers": (
        Policy.REPLACE_DATA,
        "container {name} and every blob in it are deleted",
        "copy the blobs off (AzCopy) first",
    ),
}

# What switching a block off, or to another mode, costs when hpclz created it ("new").
BLOCK_REMOVED: dict[str, tuple[Policy, str]] = {
    "storage.lustre": (Policy.REPLACE_DATA, "the Managed Lustre file system hpclz created is deleted with its data"),
    "storage.netapp": (Policy.REPLACE_DATA, "the NetApp account, pool and volumes are deleted with their data"),
    "storage.blob": (Policy.REPLACE_DATA, "the storage account and every container in it are deleted"),
    "monitoring": (Policy.REPLACE_DATA, "the Log Analytics workspace is deleted with the logs it holds"),
    "identity.key_vault": (Policy.REPLACE, "the vault is deleted (soft delete keeps it recoverable)"),
    "network.vnet": (Policy.NOT_ALLOWED, "every subnet, NIC and node would move to another network"),
}

NOT_ALLOWED_WAYS: dict[str, str] = {
    "metadata.name": _NEW_LZ,
    "metadata.environment": _NEW_LZ,
    "metadata.location": _NEW_LZ,
    "network.vnet": _NEW_LZ,
    "organization.": "resource names and groups would all change: " + _NEW_LZ,
    "compute.partitions[*].name": "add a partition with the new name, move jobs, then remove the old one",
    "storage.blob.containers[*].immutable": (
        "add a container with the new setting, copy the checkpoints to it (AzCopy), then remove the old one"
    ),
    "network.vnet.subnets": "add a subnet with the new setting, move the delegated service (NetApp, Lustre) to it",
}

_NODE_RESTART = (
    "the cluster definition changes in place; {node} picks it up when CycleCloud next starts it "
    "(terminate and start it in a maintenance window; the scheduler's persistent /sched and /shared volumes are "
    "re-attached)"
)

IN_PLACE_REASONS: dict[str, str] = {
    "metadata.tags.*": "tags update in place on every resource",
    "compute.partitions[*].max_nodes": "CycleCloud changes the nodearray limit in place; running nodes stay",
    "storage.netapp.volumes[*].protocol": policies.NFS_CONVERSION.reason,
    "storage.shared.protocol": policies.NFS_CONVERSION.reason,
    # hpclz.config.compute.NodeRole says where these facts come from.
    "compute.scheduler.vm_size": _NODE_RESTART.format(node="the scheduler node"),
    "compute.scheduler.image": _NODE_RESTART.format(node="the scheduler node"),
    "compute.login.vm_size": _NODE_RESTART.format(node="each login node"),
    "compute.login.image": _NODE_RESTART.format(node="each login node"),
    # Retention is set per blob version when `hpclz checkpoints manifest` seals it, never on the container, so
    # a new value reaches only later seals. A locked expiry can be extended but never shortened or removed
    # (learn.microsoft.com/azure/storage/blobs/immutable-version-level-worm-policies).
    "storage.blob.containers[*].retention_days": (
        "later seals use the new retention; versions already sealed keep theirs (a locked one cannot be shortened)"
    ),
    "storage.blob.containers[*].manifest_key": "manifests signed with the old key fail verify until sealed again",
    "storage.blob.containers[*].retention_locked": (
        "later seals use the new mode; versions already sealed locked stay locked until they expire"
    ),
}

HPCLZ_ONLY = ("suppress", "verify.", "state.")

# Nodes are rebuilt, not patched in place (docs/patching.md): "POWER_DOWN_ASAP: Will drain the node and mark it for
# power down. Currently running jobs will complete first and no additional jobs will be allocated to the node"
# (scontrol(1), Slurm 22.05+). Powered down, cyclecloud-slurm hands the node back to CycleCloud, which removes the VM
# (ShutdownPolicy Terminate, the default); the next job gets one made from the nodearray's current definition.
# `hpclz nodes roll` marks them so through Slurm (hpclz.slurm.roll), here or on the scheduler by Run Command. A
# rack-scale partition is replaced whole instead (hpclz.plan.racks.RACK_REPLACE): `nodes roll` refuses its nodes.
ROLL_NODES = (
    "hpclz nodes roll CONFIG --partition {p} (State=POWER_DOWN_ASAP: running jobs finish first), then hpclz nodes "
    "status CONFIG --partition {p} --wait SECONDS"
)
ROLL = "to roll its nodes after deploy: " + ROLL_NODES
# Slurm learns a partition's node shape only from `azslurm scale`: it writes the partition's node lines into
# /sched/<cluster>/azure.conf (`CPUs=`, `RealMemory=`, `Gres=gpu:<n>`) and gres.conf from the nodearray's VM size, then
# restarts slurmctld (Azure/cyclecloud-slurm@50e6739, the 4.0.9 tag: azure-slurm/slurmcc/cli.py `scale` l.632-697,
# `_partitions` l.868-872; the CPUs and memory come from the VM size's bucket, partition.py l.49-62). The README's
# order for a running cluster: import the changed cluster, then "sudo azslurm scale", which "will configure the
# partition and restart slurmctld - this generally has no impact on the running workload" (README.md l.50-59,
# l.72-78). Nodes rolled before it would come up as the new size under the old size's node lines.
RESIZE = (
    "after deploy, once hpclz-cluster-sync has imported the cluster again (/var/log/hpclz-cluster-sync.log on the "
    "CycleCloud server), run `sudo azslurm scale` on the scheduler: it rewrites partition {p}'s CPUs, RealMemory "
    "and Gres for the new size and restarts slurmctld; only then "
)
VM_SIZE = "compute.partitions[*].vm_size"

# Lists that are sets: each principal gets its role assignments whatever its position.
UNORDERED = frozenset({"identity.groups.admins", "identity.groups.users", "identity.groups.readers"})

_REASONS: dict[Policy, str] = {
    Policy.IN_PLACE: "updated in place",
    Policy.RESTART_NODES: "nodes pick it up when they restart",
    Policy.DRAIN_PARTITION: "replace nodes",
    Policy.REPLACE: "the resource is deleted and recreated",
    Policy.REPLACE_DATA: "the resource is deleted and recreated: ITS DATA IS LOST",
    Policy.NOT_ALLOWED: "cannot change after deployment",
}


def config_snapshot(config: LandingZoneConfig) -> dict[str, Any]:
    """The config as plain JSON data; SecretStr values become '**********' (for StateDocument.applied_config)."""
    return config.model_dump(mode="json")


def config_changes(before: dict[str, Any], config: LandingZoneConfig) -> list[ConfigChange]:
    out: list[ConfigChange] = []
    after = config_snapshot(config)
    _walk(before, after, LandingZoneConfig, "", "", "", out)
    racks = rack_partitions(config)
    for change in out:
        shape = policies.wildcard(change.path)
        if shape in EVALUATORS and change.kind is Action.MODIFY:
            change.verdict = EVALUATORS[shape](change.before, change.after, after)
        owner = _partition_of(change.path)
        if change.verdict.policy is Policy.DRAIN_PARTITION and owner in racks:
            action = rack_replacement(owner, racks[owner])
            change.verdict = change.verdict.model_copy(update={"action_needed": action})
        if change.verdict.policy is Policy.DRAIN_PARTITION and shape == VM_SIZE and owner in racks:
            action = f"{RESIZE.format(p=owner)}replace its racks: {change.verdict.action_needed}"
            change.verdict = change.verdict.model_copy(update={"action_needed": action})
    annotate(out, stack_upgrade(before, after, racks))
    return out


def _partition_of(path: str) -> str:
    """`compute.partitions[gb300].image` -> `gb300`; '' outside a partition."""
    prefix = "compute.partitions["
    return path[len(prefix) :].split("]", 1)[0] if path.startswith(prefix) else ""


def _walk(
    old: Any,
    new: Any,
    annotation: Any,
    path: str,
    shape: str,
    partition: str,
    out: list[ConfigChange],
    inherited: Policy | None = None,
) -> None:
    """`inherited`: the policy of the nearest annotated block above (e.g. a partition's nvme_scratch)."""
    if old == new:
        return
    model_old, model_new = _model_for(annotation, old), _model_for(annotation, new)
    if isinstance(old, dict) and isinstance(new, dict) and model_old is not None and model_old is model_new:
        for key in [*old, *(k for k in new if k not in old)]:
            field = model_old.model_fields.get(key)
            sub_shape = f"{shape}.{key}" if shape else key
            sub_path = f"{path}.{key}" if path else key
            if field is None:
                continue
            declared = _policy_of(field) or inherited
            if _is_leaf(field.annotation, old.get(key), new.get(key)):
                if not _same_leaf(sub_shape, old.get(key), new.get(key)):
                    out.append(_leaf(sub_path, sub_shape, old.get(key), new.get(key), declared, partition))
            else:
                _walk(old.get(key), new.get(key), field.annotation, sub_path, sub_shape, partition, out, declared)
        return
    if _named_items(old) and _named_items(new):
        _walk_named(old, new, annotation, path, shape, partition, out)
        return
    if isinstance(old, dict) and isinstance(new, dict) and model_old is None:
        for key in [*old, *(k for k in new if k not in old)]:  # free-form maps: tags, quotas, secrets
            if old.get(key) != new.get(key):
                out.append(_leaf(f"{path}.{key}", f"{shape}.*", old.get(key), new.get(key), inherited, partition))
        return
    out.append(_block(path, shape, old, new, inherited, partition))


def _walk_named(
    old: list[Any], new: list[Any], annotation: Any, path: str, shape: str, partition: str, out: list[ConfigChange]
) -> None:
    before = {item["name"]: item for item in old}
    after = {item["name"]: item for item in new}
    item_type = _list_item(annotation)
    for name in [*before, *(n for n in after if n not in before)]:
        here = f"{path}[{name}]"
        owner = name if shape == "compute.partitions" else partition
        if name not in after:
            policy, reason, action = ITEM_REMOVED.get(shape, (Policy.IN_PLACE, "{name} is removed", ""))
            verdict = Verdict(policy=policy, reason=reason.format(name=name), action_needed=action.format(name=name))
            out.append(ConfigChange(path=here, kind=Action.DELETE, before=before[name], verdict=verdict))
        elif name not in before:
            verdict = Verdict(policy=Policy.IN_PLACE, reason=f"{name} is added; nothing existing is touched")
            out.append(ConfigChange(path=here, kind=Action.CREATE, after=after[name], verdict=verdict))
        else:
            _walk(before[name], after[name], item_type, here, f"{shape}[*]", owner, out)


def _same_leaf(shape: str, old: Any, new: Any) -> bool:
    if shape in UNORDERED and isinstance(old, list) and isinstance(new, list):
        return sorted(map(str, old)) == sorted(map(str, new))
    return bool(old == new)


def _leaf(path: str, shape: str, old: Any, new: Any, declared: Policy | None, partition: str) -> ConfigChange:
    kind = Action.CREATE if old is None else Action.DELETE if new is None else Action.MODIFY
    policy = declared or Policy.IN_PLACE
    reason = IN_PLACE_REASONS.get(shape) or (_REASONS[policy] if declared else "no update policy declared: in place")
    if shape.startswith(HPCLZ_ONLY):
        reason = "an hpclz setting: nothing in Azure changes"
    verdict = Verdict(policy=policy, reason=reason, action_needed=_action(policy, shape, partition))
    return ConfigChange(path=path, kind=kind, before=old, after=new, verdict=verdict)


# Fields whose change recreates the CycleCloud server (its zone, its Entra ID sign-in and its image are read once, at
# creation: render/components.py): before that, the steps that keep its users' UIDs and leave no node behind.
SERVER_REBUILT = (
    "compute.service_zone",
    "identity.cyclecloud_entra",
    "compute.cyclecloud.image",
    "compute.cyclecloud.image_release",
)


def _action(policy: Policy, shape: str, partition: str) -> str:
    if policy is Policy.REPLACE and any(shape == f or shape.startswith(f + ".") for f in SERVER_REBUILT):
        return server_rebuild.replace_action()
    if policy is Policy.DRAIN_PARTITION:
        if not partition:
            return "drain the affected partitions first"
        if shape == VM_SIZE:
            return f"drain partition {partition} first; {RESIZE.format(p=partition)}roll its nodes: " + (
                ROLL_NODES.format(p=partition)
            )
        return f"drain partition {partition} first; {ROLL.format(p=partition)}"
    if policy is Policy.RESTART_NODES:
        if shape.endswith(".protocol"):
            return policies.NFS_CONVERSION_ACTION
        return "restart the affected nodes in a maintenance window"
    if policy is Policy.REPLACE_DATA:
        return "copy the data off first"
    if policy is Policy.NOT_ALLOWED:
        matches = [prefix for prefix in NOT_ALLOWED_WAYS if shape.startswith(prefix)]
        return NOT_ALLOWED_WAYS[max(matches, key=len)] if matches else _NEW_LZ
    return ""


def _block(path: str, shape: str, old: Any, new: Any, declared: Policy | None, partition: str) -> ConfigChange:
    """A whole block appears, disappears or changes mode (new -> existing -> disabled)."""
    old_mode, new_mode = _tag(old), _tag(new)
    kind = Action.CREATE if old in (None, {}) else Action.DELETE if new in (None, {}) else Action.MODIFY
    if old_mode == "new" and new_mode != "new" and shape in BLOCK_REMOVED:
        policy, reason = BLOCK_REMOVED[shape]
        action = _action(policy, shape, "")
        verdict = Verdict(policy=policy, reason=f"{old_mode} -> {new_mode}: {reason}", action_needed=action)
    elif old_mode and new_mode and old_mode != new_mode:
        verdict = Verdict(policy=Policy.REPLACE, reason=f"mode {old_mode} -> {new_mode}: hpclz stops managing it")
    elif declared is not None:
        verdict = Verdict(policy=declared, reason=_REASONS[declared], action_needed=_action(declared, shape, partition))
    else:
        verdict = Verdict(policy=Policy.IN_PLACE, reason=_REASONS[Policy.IN_PLACE])
    return ConfigChange(path=path, kind=kind, before=old, after=new, verdict=verdict)


def _policy_of(field: Any) -> Policy | None:
    extra = field.json_schema_extra
    value = extra.get(UPDATE_POLICY) if isinstance(extra, dict) else None
    return Policy(value) if isinstance(value, str) else None


def _tag(value: Any) -> str:
    if isinstance(value, dict):
        return next((str(value[k]) for k in TAG_KEYS if k in value), "")
    return ""


def _named_items(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in value)


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _models(args[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in args for m in _models(arg)]
    return []


def _model_for(annotation: Any, value: Any) -> type[BaseModel] | None:
    """The model class that describes `value`; for a tagged union, the member whose mode/backend matches."""
    candidates = _models(annotation)
    if len(candidates) == 1:
        return candidates[0]
    tag = _tag(value)
    for cls in candidates:
        if any(k in cls.model_fields and cls.model_fields[k].default == tag for k in TAG_KEYS):
            return cls
    return None


def _list_item(annotation: Any) -> Any:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    args = typing.get_args(annotation)
    return args[0] if typing.get_origin(annotation) is list and args else None


def _is_leaf(annotation: Any, old: Any, new: Any) -> bool:
    """Scalars and lists of scalars compare whole; models, maps and named lists are walked."""
    if _named_items(old) and _named_items(new) and (old or new):
        return False
    if isinstance(old, dict) or isinstance(new, dict):
        return False
    if isinstance(old, list) or isinstance(new, list):
        return not (_named_items(old or []) and _named_items(new or []) and (old or new))
    return not _models(annotation) or (old is not None and new is not None)
