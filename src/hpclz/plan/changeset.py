"""The change set: what `hpclz plan` says will happen, per config field and per Azure resource.

Both the offline diff (rendered templates against state) and the online one (ARM what-if) produce
this model, so the printer, the JSON output and `--detailed-exitcode` never care which ran.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from hpclz.state.model import StateDocument


class Action(StrEnum):
    CREATE = "create"
    MODIFY = "modify"
    DELETE = "delete"
    REPLACE = "replace"
    NO_CHANGE = "no_change"


class Policy(StrEnum):
    """What a change costs, cheapest first (the order is used to pick the worst of several)."""

    IN_PLACE = "in_place"
    RESTART_NODES = "restart_nodes"
    DRAIN_PARTITION = "drain_partition"
    REPLACE = "replace"
    REPLACE_DATA = "replace_data"
    NOT_ALLOWED = "not_allowed"

    @property
    def rank(self) -> int:
        return list(Policy).index(self)

    @property
    def loses_data(self) -> bool:
        return self is Policy.REPLACE_DATA


def worst(policies: list[Policy], default: Policy = Policy.IN_PLACE) -> Policy:
    return max(policies, key=lambda p: p.rank, default=default)


class Verdict(BaseModel):
    """A policy with the reason for it and, where there is one, what the engineer must do."""

    policy: Policy = Policy.IN_PLACE
    reason: str = ""
    action_needed: str = ""
    source: str = Field(default="", description="Where the fact comes from (documentation URL or ARM error).")


class PropertyChange(BaseModel):
    path: str = Field(description="e.g. properties.addressSpace.addressPrefixes or sku.name")
    kind: Action = Field(description="create (added), delete (removed) or modify")
    before: Any = None
    after: Any = None
    verdict: Verdict = Field(default_factory=Verdict)
    noise_reason: str = Field(default="", description="Why the what-if filter treats this as noise.")

    @property
    def forces_replacement(self) -> bool:
        return self.verdict.policy in (Policy.REPLACE, Policy.REPLACE_DATA)


class ResourceChange(BaseModel):
    id: str
    type: str
    name: str
    label: str = Field(default="", description="Readable name for people (role assignments); never used to match.")
    deployment: str = ""
    action: Action
    data_bearing: bool = False
    verdict: Verdict = Field(default_factory=Verdict)
    changes: list[PropertyChange] = Field(default_factory=list)
    noise: list[PropertyChange] = Field(default_factory=list, description="Filtered what-if property changes.")
    attributes: list[PropertyChange] = Field(
        default_factory=list,
        description="A create: every property the resource is created with, secrets as (sensitive) "
        "(hpclz.plan.attributes).",
    )
    unchanged_attributes: int = Field(default=0, description="An update: how many properties stay as they are.")

    @property
    def data_loss(self) -> bool:
        return self.data_bearing and self.action in (Action.DELETE, Action.REPLACE)


class ConfigChange(BaseModel):
    path: str = Field(description="compute.partitions[gpu].vm_size: list items are named, not numbered")
    kind: Action
    before: Any = None
    after: Any = None
    verdict: Verdict = Field(default_factory=Verdict)


Role = Literal["scheduler", "login", "partition"]


class ClusterLine(BaseModel):
    """One scheduler, login nodearray or partition as the plan shows it."""

    role: Role
    name: str = Field(description="`scheduler`, `login`, or the partition (and nodearray) name.")
    vm_size: str
    image: str
    min_nodes: int = Field(description="Nodes running from the start (a partition starts none: autoscale).")
    max_nodes: int
    spot: bool = False
    zone: str | None = Field(default=None, description="Availability zone; None: Azure picks (regional).")
    racks: int | None = Field(
        default=None, description="Racks (NVLink domains) of a rack-scale partition; None where racks do not apply."
    )
    action: Action | None = Field(
        default=None, description="What the apply does to it; None: unknown (the state holds no applied config)."
    )
    verdict: Verdict = Field(default_factory=Verdict)
    changes: list[ConfigChange] = Field(default_factory=list, description="The config changes that make up the line.")

    @property
    def label(self) -> str:
        return self.name if self.role == "partition" else self.role

    def summary(self) -> str:
        """What nodes this is, in one line: `8 x Standard_ND96isr_H100_v5 (0-8 nodes, spot, zone 1)`."""
        count = f"{self.max_nodes} x {self.vm_size}" if self.max_nodes != 1 else self.vm_size
        extras = [f"{self.min_nodes}-{self.max_nodes} nodes"] if self.min_nodes != self.max_nodes else []
        extras += ["spot"] if self.spot else []
        extras += [f"zone {self.zone}"] if self.zone else []
        extras += [f"{self.racks} racks"] if self.racks is not None else []
        return f"{count} ({', '.join(extras)})" if extras else count


class StackUpgrade(BaseModel):
    """A change of the CycleCloud / cyclecloud-slurm / Slurm triple as Slurm's upgrade rules allow it."""

    source: str = Field(
        description="The triple in state, e.g. CycleCloud 8.7.1 + cyclecloud-slurm 3.0.11 + Slurm 24.05.4-2"
    )
    target: str = Field(description="The triple in the config.")
    allowed: bool = Field(description="False: the config skips past Slurm's compatibility window, or goes back.")
    reason: str = ""
    road: list[str] = Field(default_factory=list, description="Triples to deploy in order, ending with the target.")
    steps: list[str] = Field(default_factory=list, description="Ordered steps of the next deploy (allowed only).")
    source_doc: str = ""
    replaces_server: bool = Field(
        default=False,
        description="The CycleCloud server is recreated from a new image (its database starts empty), not upgraded "
        "in place.",
    )


class NodeScripts(BaseModel):
    """Nodes whose boot script (CloudInit) or slurm.conf lines differ from the cluster definition last applied, and the
    steps that bring them onto the new ones (hpclz.plan.node_scripts): a running node keeps what its VM was created
    with."""

    scheduler: list[str] = Field(
        default_factory=list, description="What differs on the scheduler: `CloudInit`, `slurm.conf lines`; empty: none."
    )
    login: bool = Field(default=False, description="The login nodes' CloudInit differs.")
    partitions: list[str] = Field(default_factory=list, description="Partitions whose nodes' CloudInit differs.")
    server: str = Field(default="", description="The CycleCloud server VM, whose userData carries the definition.")
    racks: dict[str, int] = Field(
        default_factory=dict, description="The rack-scale ones among `partitions`, with their racks (replaced whole)."
    )
    covered_by: str = Field(
        default="", description="Another part of the plan that makes every one of these nodes a new VM anyway."
    )
    steps: list[str] = Field(default_factory=list, description="Ordered steps after the deploy; empty when covered.")


class Summary(BaseModel):
    add: int = 0
    change: int = 0
    replace: int = 0
    destroy: int = 0

    def line(self) -> str:
        return (
            f"Plan: {self.add} to add, {self.change} to change, {self.replace} to replace, {self.destroy} to destroy."
        )

    @classmethod
    def of(cls, actions: Iterable[Action]) -> Summary:
        """How many of `actions` add, change, replace and destroy; no-change and reads count in none."""
        counted = Counter(actions)
        return cls(
            add=counted[Action.CREATE],
            change=counted[Action.MODIFY],
            replace=counted[Action.REPLACE],
            destroy=counted[Action.DELETE],
        )


# Graph's object type path for an app role assignment (hpclz.deploy.app_roles names what destroy deletes with it).
APP_ROLE_ASSIGNMENT_TYPE = "Microsoft.Graph/servicePrincipals/appRoleAssignedTo"


class AppRoleChange(BaseModel):
    """One app role assignment in CycleCloud's Entra app: a Microsoft Graph object, not an ARM resource. The same
    keys as a ResourceChange where they mean the same (id, type, name, label, action)."""

    id: str = Field(default="", description="The assignment's Graph ID (from state); empty for one to create.")
    type: str = APP_ROLE_ASSIGNMENT_TYPE
    name: str = Field(description="`<app role> for <group object ID>`.")
    label: str = Field(default="", description="Readable: the app role and where the config names the group.")
    action: Action
    app_id: str = Field(description="CycleCloud's app (identity.cyclecloud_entra.client_id).")
    principal_id: str = Field(description="Object ID of the group given the role (identity.groups).")
    app_role: str = Field(description="The app role's value, e.g. Global.Node.User.")
    path: str = Field(default="", description="Where the config names the group; empty when it no longer does.")
    reason: str = Field(default="", description="Why, where the action alone does not say it.")


class EntraChanges(BaseModel):
    """What deploy (or destroy) changes in Microsoft Entra ID, another authority than ARM, through Microsoft Graph:
    made after the ARM deployments, and a refusal there does not fail the deploy (hpclz.deploy.app_roles)."""

    authority: str = "Microsoft Entra ID"
    via: str = "Microsoft Graph"
    app_id: str
    assignments: list[AppRoleChange] = Field(default_factory=list)
    left_alone: list[str] = Field(
        default_factory=list,
        description="`--destroy`: recorded assignments destroy leaves alone, as '<id>: <why>' (Graph holds the ID "
        "for another group or role than state records).",
    )
    graph_read: bool = Field(default=False, description="Microsoft Graph was read (the plan read Azure).")
    not_read: str | None = Field(default=None, description="Why Graph was not read: listed from state and config.")
    note: str = Field(default="", description="What may keep Graph from making these changes.")

    @property
    def changed(self) -> list[AppRoleChange]:
        return [a for a in self.assignments if a.action is not Action.NO_CHANGE]

    @property
    def summary(self) -> Summary:
        return Summary.of(a.action for a in self.assignments)

    def payload(self) -> dict[str, Any]:
        body = self.model_dump(mode="json")
        body["summary"] = self.summary.model_dump()
        body["has_changes"] = bool(self.changed)
        return body


class StateRef(BaseModel):
    """Which state the plan was computed against (None: there was no state)."""

    lineage: str
    serial: int

    @classmethod
    def of(cls, state: StateDocument | None) -> StateRef | None:
        return None if state is None else cls(lineage=state.lineage, serial=state.serial)


class ChangeSet(BaseModel):
    mode: str = Field(description="offline (rendered templates against state) or what-if (ARM)")
    landing_zone: str
    environment: str
    state: StateRef | None = None
    config_changes: list[ConfigChange] = Field(default_factory=list)
    config_baseline: bool = Field(
        default=True, description="False when the state holds no applied config, so no config diff was possible."
    )
    resources: list[ResourceChange] = Field(default_factory=list)
    ignored: list[str] = Field(
        default_factory=list, description="Resource IDs what-if marked Ignore (in the scope, not in the template)."
    )
    unsupported: list[str] = Field(
        default_factory=list, description="Resources ARM what-if could not evaluate (Unsupported), with reasons."
    )
    refreshed: bool = Field(default=False, description="Azure was read back (--refresh): drift is known.")
    left_alone: list[str] = Field(
        default_factory=list,
        description="`--destroy`: recorded resources destroy leaves alone, as '<id>: <why>' (no proof that the zone "
        "owns them, hpclz.deploy.ownership).",
    )
    drift: list[ResourceChange] = Field(
        default_factory=list, description="Recorded resources changed or deleted outside hpclz (--refresh)."
    )
    resubmit: list[str] = Field(
        default_factory=list,
        description="Deployments to submit again although their template is unchanged (a rotated secret).",
    )
    cluster: list[ClusterLine] = Field(
        default_factory=list,
        description="The scheduler, login nodes and partitions CycleCloud creates, with their change verdicts.",
    )
    stack_upgrade: StackUpgrade | None = Field(
        default=None, description="The triple changes: its ordered steps, or why the change is refused."
    )
    node_scripts: NodeScripts | None = Field(
        default=None,
        description="Nodes whose boot script or slurm.conf lines differ from the applied cluster definition, with the "
        "steps that replace them; None: none differ, or there is nothing applied to compare with.",
    )
    targets: list[str] = Field(
        default_factory=list, description="`--target`: the IDs of the resources named (their attributes are shown)."
    )
    entra: EntraChanges | None = Field(
        default=None,
        description="App role assignments in CycleCloud's Entra app (Microsoft Graph, not ARM); None when the config "
        "implies none and state records none. Counted apart from `summary` and `has_changes`, which are ARM's.",
    )

    @property
    def summary(self) -> Summary:
        return Summary.of(r.action for r in self.resources)

    @property
    def changed_resources(self) -> list[ResourceChange]:
        return [r for r in self.resources if r.action is not Action.NO_CHANGE]

    @property
    def has_changes(self) -> bool:
        return bool(self.changed_resources or self.config_changes or self.drift)

    @property
    def noise_count(self) -> int:
        return sum(len(r.noise) for r in self.resources) + len(self.ignored)

    @property
    def blocked(self) -> list[str]:
        """Changes that ARM or the service refuses: the plan cannot be applied as it stands."""
        found = [c.path for c in self.config_changes if c.verdict.policy is Policy.NOT_ALLOWED]
        found += [f"{r.type} {r.name}" for r in self.changed_resources if r.verdict.policy is Policy.NOT_ALLOWED]
        return found

    @property
    def data_loss(self) -> list[str]:
        found = [c.path for c in self.config_changes if c.verdict.policy.loses_data]
        found += [f"{r.type} {r.name}" for r in self.changed_resources if r.data_loss]
        return found

    @property
    def worst_policy(self) -> Policy:
        return worst(
            [c.verdict.policy for c in self.config_changes] + [r.verdict.policy for r in self.changed_resources]
        )

    def unique_labels(self) -> None:
        """Resources of one type and label (a diagnostic setting on three resources, a policy assignment in
        five groups) get where they sit added to the label, so no two lines read the same."""
        from hpclz.plan.resources import scope_label

        for group in (self.resources, self.drift):
            seen: dict[tuple[str, str], list[ResourceChange]] = {}
            for r in group:
                seen.setdefault((r.type.lower(), r.label or r.name), []).append(r)
            for same in seen.values():
                if len(same) > 1:
                    for r in same:
                        r.label = f"{r.label or r.name} at {scope_label(r.id, r.type)}"

    def payload(self) -> dict[str, Any]:
        """The `result` of `hpclz plan -o json`: stable keys, add new ones rather than renaming."""
        body = self.model_dump(mode="json")
        body["summary"] = self.summary.model_dump()
        body["has_changes"] = self.has_changes
        body["noise_filtered"] = self.noise_count
        body["worst_policy"] = self.worst_policy.value
        body["blocked"] = self.blocked
        body["data_loss"] = self.data_loss
        body["entra"] = None if self.entra is None else self.entra.payload()
        return body
