"""Delete what hpclz created: recorded in state and tagged hpclz-managed, in reverse dependency order.

Data-bearing resources (Lustre, NetApp volumes, checkpoint storage) are kept unless asked (immutable checkpoint
containers among them: even when asked, Azure refuses while a sealed version's retention runs, and the failure
says so), and with
them everything they stand on: their parents, their resource group, and the resources their recorded
properties reference (a Lustre file system keeps its subnet, hence the VNet), and what keeps them reachable: a kept
zone's VNet link, the private endpoint of a kept account or vault and its DNS zone group (hpclz.deploy.private_reach).
A resource group is deleted whole only when it holds nothing kept and nothing hpclz did not create.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from hpclz.azure.arm import Arm
from hpclz.azure.errors import describe
from hpclz.deploy.ownership import GROUP_ID, Ownership, tag_refusal
from hpclz.deploy.private_reach import reach
from hpclz.deploy.vault_note import PROTECTED_ITEM, protected_items, vault_note
from hpclz.plan.policies import is_subscription_wide
from hpclz.render.model import DATA_BEARING_TYPES, DATA_TAG, Deployment
from hpclz.state.model import ResourceRecord, StateDocument, now

GROUP_TYPE = "microsoft.resources/resourcegroups"


class Action(StrEnum):
    DELETED = "deleted"
    KEPT = "kept"
    GONE = "already gone"
    LEFT = "left alone"  # no proof that this zone owns it (hpclz.deploy.ownership), or holds what it did not create
    RELEASED = "left on"  # a subscription-wide setting: no longer managed, not reset (plan.policies)
    FAILED = "failed"


@dataclass(frozen=True)
class Outcome:
    id: str
    type: str
    action: Action
    reason: str = ""


def _group_of(resource_id: str) -> str | None:
    parts = resource_id.split("/")
    return parts[4].lower() if len(parts) > 4 and parts[3].lower() == "resourcegroups" else None


def _references(text: str, r: ResourceRecord) -> bool:
    """Rendered properties name what they use as resourceId('<rg>', '<type>', '<name>', ...) or a full ID."""
    lowered = text.lower()
    return (r.type.lower() in lowered and f"'{r.name.lower()}'" in lowered) or r.id.lower() in lowered


# Azure refuses to delete a blob version whose time-based retention has not expired, and so the container, account
# and group that hold it; a locked retention cannot even be shortened to let it go
# (learn.microsoft.com/azure/storage/blobs/immutable-version-level-worm-policies).
WORM_NOTE = (
    "holds immutable container {names}: blob versions sealed by `hpclz checkpoints manifest` cannot be deleted "
    "before their retention expires; run destroy --include-data again after that"
)


RELEASED_NOTE = (
    "Defender plan {name} stays on for the whole subscription; to turn it off: "
    "az security pricing create -n {name} --tier free"
)


def is_immutable(r: ResourceRecord) -> bool:
    """A container recorded with version-level immutability (the body, or only its properties in older states)."""
    body = r.properties.get("properties", r.properties)
    worm = body.get("immutableStorageWithVersioning") if isinstance(body, dict) else None
    return isinstance(worm, dict) and worm.get("enabled") is True


def worm_note(records: list[ResourceRecord]) -> str:
    names = sorted(r.name.rsplit("/", 1)[-1] for r in records if is_immutable(r))
    return " (" + WORM_NOTE.format(names=", ".join(names)) + ")" if names else ""


# A private DNS zone answers only inside the VNets linked to it: "Azure private DNS zone integration allows you to
# resolve the private DNS within the current virtual network or any in-region peered virtual network where the private
# DNS Zone is linked" (learn.microsoft.com/azure/mysql/flexible-server/concepts-networking-vnet; virtual network links:
# learn.microsoft.com/azure/dns/private-dns-virtual-network-links). A kept MySQL server keeps its zone (its recorded
# properties name it) and its VNet (which holds its delegated subnet); without the link between them the server's
# name does not resolve from the VNet, so the kept server would be unreachable until the next deploy.
DNS_LINK = "microsoft.network/privatednszones/virtualnetworklinks"
VNET = "microsoft.network/virtualnetworks"


def _needed_link(r: ResourceRecord, kept: dict[str, str], by_id: dict[str, ResourceRecord]) -> str | None:
    """Why a private DNS zone's VNet link stays: its zone and the VNet it links are both kept."""
    if r.type.lower() != DNS_LINK:
        return None
    zone = r.id.lower().rsplit("/virtualnetworklinks/", 1)[0]
    if zone not in kept:
        return None
    text = json.dumps(r.properties)
    vnets = [by_id[k] for k in kept if k in by_id and by_id[k].type.lower() == VNET]
    vnet = next((v for v in vnets if _references(text, v)), None)
    if vnet is None:
        return None
    return f"resolves kept {by_id[zone].name if zone in by_id else zone.rsplit('/', 1)[-1]} in kept {vnet.name}"


def kept_set(resources: list[ResourceRecord], include_data: bool) -> dict[str, str]:
    """Resource id (lower) -> why it is kept."""
    kept = {} if include_data else {r.id.lower(): "data-bearing" for r in resources if r.data_bearing}
    by_id = {r.id.lower(): r for r in resources}
    changed = True
    while changed:
        changed = False
        # A kept backup item holds its recovery points, not its source VM: Azure keeps a deleted VM's recovery points.
        texts = {
            r.id.lower(): json.dumps(r.properties)
            for r in resources
            if r.id.lower() in kept and r.type.lower() != PROTECTED_ITEM
        }
        for r in resources:
            key = r.id.lower()
            if key in kept:
                continue
            holder = next((k for k in kept if k.startswith(key + "/")), None)
            user = next((k for k, t in texts.items() if _references(t, r)), None)
            if r.type.lower() == GROUP_TYPE:
                holder = holder or next((k for k in kept if _group_of(k) == r.name.lower()), None)
            if holder or user:
                kept[key] = (
                    f"holds kept {(holder or user or '').rsplit('/', 1)[-1]}"
                    if holder
                    else f"used by kept {(user or '').rsplit('/', 1)[-1]}"
                )
                changed = True
            elif why := _needed_link(r, kept, by_id) or reach(r, kept, by_id):
                kept[key] = why
                changed = True
    return kept


def dependants_first(records: list[ResourceRecord]) -> list[ResourceRecord]:
    """Delete order: whatever uses a resource before it, children before parents. Azure refuses to delete what is
    in use: an NSG a subnet or NIC names (InUseNetworkSecurityGroupCannotBeDeleted, "cannot be deleted because it is
    in use by the following resources", github.com/pulumi/pulumi-azure-native issue 3051), a public IP a NAT gateway
    or Bastion holds (PublicIPAddressCannotBeDeleted, "can not be deleted since it is still allocated to resource",
    github.com/ernestio/ernest issue 514), a subnet something sits in (InUseSubnetCannotBeDeleted,
    github.com/kubernetes-sigs/cluster-api-provider-azure issue 172). A resource's recorded properties name what it
    uses (`_references`); ties keep the deepest-first order, then state order."""
    base = sorted(records, key=lambda x: -x.id.count("/"))
    texts = [json.dumps(r.properties).lower() for r in base]
    # blockers[i]: the records that must go before record i (its users and its children).
    blockers = [
        {
            j
            for j, other in enumerate(base)
            if j != i and (other.id.lower().startswith(r.id.lower() + "/") or _references(texts[j], r))
        }
        for i, r in enumerate(base)
    ]
    ordered: list[ResourceRecord] = []
    done: set[int] = set()
    while len(done) < len(base):
        ready = next((i for i in range(len(base)) if i not in done and blockers[i] <= done), None)
        if ready is None:  # a cycle (two resources naming each other): fall back to the base order
            ready = next(i for i in range(len(base)) if i not in done)
        done.add(ready)
        ordered.append(base[ready])
    return ordered


class Destroyer:
    def __init__(
        self,
        arm: Arm,
        doc: StateDocument,
        order: list[str],
        on_event: Callable[[Outcome], None] = lambda _o: None,
        planned: list[Deployment] | None = None,
    ):
        """`planned`: the config's deployments, whose runs in ARM prove what the zone created (hpclz.deploy.ownership)."""
        self.arm = arm
        self.doc = doc
        self.owner = Ownership(arm, doc, planned)
        self.order = order  # deployment names, dependants first
        self.emit = on_event
        self.outcomes: list[Outcome] = []

    def _note(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self.emit(outcome)

    def _whole_groups(self, kept: dict[str, str], include_data: bool) -> set[str]:
        ours = {r.id.lower() for r in self.doc.resources}
        whole: set[str] = set()
        for r in self.doc.resources:
            if r.type.lower() != GROUP_TYPE or r.id.lower() in kept:
                continue
            if not GROUP_ID.match(r.id) or (refused := self.owner.offline_refusal(r)):
                self._note(Outcome(r.id, r.type, Action.LEFT, refused or "not a resource group ID"))
                continue
            try:
                refused = self.owner.refusal(r)
                if refused == "not found":
                    self._note(Outcome(r.id, r.type, Action.GONE))
                    continue
                if refused:
                    self._note(Outcome(r.id, r.type, Action.LEFT, refused))
                    continue
                listed = self.arm.group_resources(r.name)
                unrecorded_data = [
                    x["id"]
                    for x in listed
                    if x["id"].lower() not in ours
                    and (
                        (x.get("tags") or {}).get(DATA_TAG) == "true"
                        or str(x.get("type", "")).lower() in DATA_BEARING_TYPES
                    )
                ]
                foreign = [
                    x["id"]
                    for x in listed
                    # The zone's tags also claim what an interrupted or failed run created but never recorded.
                    if x["id"].lower() not in ours and self._foreign(x)
                ]
            except Exception as exc:  # carry on: one unreadable group must not stop the others
                self._note(Outcome(r.id, r.type, Action.FAILED, describe(exc).one_line()))
                continue
            if foreign:
                self._note(Outcome(r.id, r.type, Action.LEFT, f"holds {len(foreign)} resources hpclz did not create"))
            elif unrecorded_data and not include_data:
                self._note(
                    Outcome(r.id, r.type, Action.KEPT, f"holds unrecorded data {unrecorded_data[0].rsplit('/', 1)[-1]}")
                )
            else:
                whole.add(r.name.lower())
        return whole

    def _foreign(self, listed: dict[str, Any]) -> bool:
        return tag_refusal(listed.get("tags") or {}, self.doc.landing_zone, self.doc.environment) is not None

    def run(self, include_data: bool) -> StateDocument:
        kept = kept_set(self.doc.resources, include_data)
        for r in self.doc.resources:
            if r.id.lower() in kept:
                self._note(Outcome(r.id, r.type, Action.KEPT, kept[r.id.lower()]))
        whole = self._whole_groups(kept, include_data)
        gone: set[str] = set()
        by_deployment: dict[str, list[ResourceRecord]] = {}
        for r in self.doc.resources:
            by_deployment.setdefault(r.deployment, []).append(r)
        names = [n for n in self.order if n in by_deployment] + [
            n for n in reversed(list(by_deployment)) if n not in self.order
        ]
        for name in names:
            record = self.doc.deployments.get(name)
            target = (record.resource_group or "").lower() if record else ""
            if target in whole:
                self._delete_group(target, gone)  # what the deployment made in other groups is deleted below
            for r in dependants_first(by_deployment[name]):
                key, group = r.id.lower(), _group_of(r.id)
                if key in kept or key in gone or (group in whole and r.type.lower() != GROUP_TYPE):
                    continue
                if r.type.lower() == GROUP_TYPE:
                    if r.name.lower() in whole:
                        self._delete_group(r.name.lower(), gone)
                    continue
                self._delete_resource(r, gone)
        for group in sorted(whole):
            self._delete_group(group, gone)
        return self._remaining(gone)

    def _delete_group(self, name: str, gone: set[str]) -> None:
        records = [r for r in self.doc.resources if _group_of(r.id) == name]
        group_record = next((r for r in records if r.type.lower() == GROUP_TYPE), None)
        if group_record is None or group_record.id.lower() in gone:
            return
        for item in protected_items(records):
            self._delete_resource(item, gone)
        try:
            self.arm.delete_group(group_record.name)
        except Exception as exc:  # reported, and the rest carries on
            reason = describe(exc).one_line() + worm_note(records) + vault_note(records)
            self._note(Outcome(group_record.id, group_record.type, Action.FAILED, reason))
            gone.add(group_record.id.lower())  # tried once; its resources stay recorded below
            return
        for r in records:
            gone.add(r.id.lower())
        self._note(
            Outcome(group_record.id, group_record.type, Action.DELETED, f"whole group, {len(records) - 1} resources")
        )

    def _delete_resource(self, r: ResourceRecord, gone: set[str]) -> None:
        refused = self.owner.offline_refusal(r)
        if refused:
            self._note(Outcome(r.id, r.type, Action.LEFT, refused))
            return
        if is_subscription_wide(r.type):
            # Resetting a Defender plan to Free would change the subscription for every workload in it.
            gone.add(r.id.lower())
            self._note(Outcome(r.id, r.type, Action.RELEASED, RELEASED_NOTE.format(name=r.name)))
            return
        try:
            current = self.arm.get_resource(r.id, r.api_version)
            if current is None:
                gone.add(r.id.lower())
                self._note(Outcome(r.id, r.type, Action.GONE))
                return
            refused = self.owner.refusal(r, current)
            if refused:
                self._note(Outcome(r.id, r.type, Action.LEFT, refused))
                return
            self.arm.delete_resource(r.id, r.api_version)
        except Exception as exc:  # reported, and the rest carries on
            held = [
                x
                for x in self.doc.resources
                if x.id.lower() == r.id.lower() or x.id.lower().startswith(r.id.lower() + "/")
            ]
            note = worm_note(held) + vault_note(held)
            self._note(Outcome(r.id, r.type, Action.FAILED, describe(exc).one_line() + note))
            return
        gone.add(r.id.lower())
        self._note(Outcome(r.id, r.type, Action.DELETED))

    def _remaining(self, gone: set[str]) -> StateDocument:
        failed = {o.id.lower() for o in self.outcomes if o.action in (Action.FAILED, Action.LEFT)}
        left = [r for r in self.doc.resources if r.id.lower() not in gone or r.id.lower() in failed]
        doc = self.doc.model_copy(deep=True)
        doc.resources = left
        # Every deployment lost something, so none may be skipped as "unchanged" by the next deploy; the runs stay
        # named so that the next destroy does not take them in from ARM's history as unrecorded (in_flight).
        doc.destroyed_runs = {
            **doc.destroyed_runs,
            **{name: r.correlation_id for name, r in doc.deployments.items() if r.correlation_id},
        }
        doc.deployments = {}
        doc.outputs = {}
        doc.updated_at = now()
        return doc


def outcome_dict(o: Outcome) -> dict[str, Any]:
    return {"id": o.id, "type": o.type, "action": o.action.value, "reason": o.reason}
