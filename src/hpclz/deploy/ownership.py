"""Whether this landing zone owns a recorded resource, proved against Azure before destroy, prune or
`plan --destroy` names it.

State is a file: a record in it says only that someone wrote it there. Before anything is deleted (or listed to
be deleted) each record needs a proof that Azure itself confirms:

- `tagged`: Azure returns the resource tagged `hpclz-managed=true` and `hpclz-zone=<this zone>` (and, where set,
  `hpclz-environment=<this environment>`), the tags every resource hpclz renders carries
  (`hpclz.render.zone.Zone.tags`);
- `child`: an untagged child resource (a subnet) or extension resource (a role assignment, a lock, a diagnostic
  setting) whose parent or scope this zone owns;
- `created`: ARM's own record of one of this zone's deployments lists it (Deployments - Get `outputResources`, or a
  succeeded operation's `targetResource` in Deployment Operations - List:
  learn.microsoft.com/rest/api/resources/deployment-operations/list).

A record in another subscription gets no request at all: its refusal is decided from the ID alone.
"""

from __future__ import annotations

import re
from typing import Any

from hpclz.arm.api_versions import pinned_version
from hpclz.azure.arm import Arm
from hpclz.deploy.in_flight import from_record
from hpclz.deploy.records import applied_ids
from hpclz.plan.resources import parse_resource_id
from hpclz.render.model import ENVIRONMENT_TAG, MANAGED_TAG, ZONE_TAG, Deployment
from hpclz.state.model import ResourceRecord, StateDocument

GROUP_ID = re.compile(r"^/subscriptions/([^/]+)/resourceGroups/([^/]+)$", re.I)
SUBSCRIPTION_ID = re.compile(r"^/subscriptions/([^/]+)$", re.I)
# Types ARM gives no tags (extension resources): their proof is their scope, or a run of the zone that made them.
UNTAGGABLE = frozenset(
    {
        "microsoft.authorization/roleassignments",
        "microsoft.authorization/policyassignments",
        "microsoft.authorization/locks",
        "microsoft.insights/diagnosticsettings",
    }
)


def subscription_of(resource_id: str) -> str | None:
    match = re.match(r"^/subscriptions/([^/]+)", resource_id, flags=re.I)
    return match.group(1).lower() if match else None


def is_extension(resource_id: str) -> bool:
    """An extension resource (a DCR association, a maintenance assignment on a VM) sits at another resource's scope:
    its ID holds a second `/providers/` (learn.microsoft.com/azure/azure-resource-manager/templates/scope-extension-
    resources). hpclz renders them untagged, so their proof is the resource they extend."""
    return resource_id.lower().count("/providers/") > 1


def parent_of(resource_id: str) -> str:
    """The resource a child belongs to, the scope an extension resource sits at, or a top-level resource's group."""
    lowered = resource_id.lower()
    at = lowered.rfind("/providers/")
    if at < 0:
        return resource_id.rsplit("/", 2)[0]
    segments = resource_id[at + len("/providers/") :].split("/")
    if len(segments) > 3:  # namespace/type/name/childType/childName: the parent resource
        return resource_id.rsplit("/", 2)[0]
    return resource_id[:at]


def tag_refusal(tags: dict[str, Any], zone: str, environment: str) -> str | None:
    """Why these tags do not prove the zone's ownership; None when they do."""
    if str(tags.get(MANAGED_TAG, "")).lower() != "true":
        return f"not tagged {MANAGED_TAG}=true"
    if tags.get(ZONE_TAG) != zone:
        found = tags.get(ZONE_TAG)
        return f"tagged {ZONE_TAG}={found}, not this zone's {zone}" if found else f"not tagged {ZONE_TAG}={zone}"
    env = tags.get(ENVIRONMENT_TAG)
    if env is not None and env != environment:
        return f"tagged {ENVIRONMENT_TAG}={env}, not this zone's {environment}"
    return None


class Ownership:
    """Proofs for one state document's records, each Azure read made once."""

    def __init__(self, arm: Arm, doc: StateDocument, planned: list[Deployment] | None = None):
        self.arm = arm
        self.doc = doc
        self.subscription = arm.subscription_id.lower()
        self.by_id = {r.id.lower(): r for r in doc.resources}
        self.planned = {d.name: d for d in planned or []}
        self._owned: dict[str, str | None] = {}
        self._created: dict[str, set[str]] = {}

    def offline_refusal(self, record: ResourceRecord) -> str | None:
        """Refusals decided from the ID alone, before any request: another subscription's resource."""
        sub = subscription_of(record.id)
        if sub != self.subscription:
            return f"in subscription {sub}, not the zone's {self.subscription}: hpclz sends no request there"
        if SUBSCRIPTION_ID.match(record.id):
            return "a subscription is never hpclz's to delete"
        return None

    def refusal(self, record: ResourceRecord, live: dict[str, Any] | None = None) -> str | None:
        """Why the zone cannot prove it owns `record` (None: it can). `live`: the resource as a GET just returned it."""
        found = self.offline_refusal(record)
        if found:
            return found
        key = record.id.lower()
        if key not in self._owned:
            self._owned[key] = self._judge(record, live)
        return self._owned[key]

    def _judge(self, record: ResourceRecord, live: dict[str, Any] | None) -> str | None:
        group = GROUP_ID.match(record.id)
        if group:
            found = self.arm.get_group(group.group(2))
            return "not found" if found is None else tag_refusal(found.get("tags") or {}, *self._zone())
        if live is None:
            live = self._read(record.id, record.api_version)
            if live is None:
                return "not found"
        tags = live.get("tags") or {}
        rtype = record.type.lower()
        if tags or (rtype.count("/") == 1 and rtype not in UNTAGGABLE and not is_extension(record.id)):
            return tag_refusal(tags, *self._zone())
        parent = parent_of(record.id)
        if not SUBSCRIPTION_ID.match(parent) and self._owns_id(parent) is None:
            return None  # a child (or extension resource) of what the zone owns
        if self._made_by_zone(record):
            return None
        where = "the subscription" if SUBSCRIPTION_ID.match(parent) else parent.rsplit("/", 1)[-1]
        return f"untagged, its scope {where} is not this zone's, and no run of the zone's deployments lists it"

    def _zone(self) -> tuple[str, str]:
        return self.doc.landing_zone, self.doc.environment

    def _owns_id(self, resource_id: str) -> str | None:
        record = self.by_id.get(resource_id.lower())
        if record is None:
            rtype, name = parse_resource_id(resource_id)
            version = pinned_version(rtype) or ""
            if not GROUP_ID.match(resource_id) and not version:
                return "no API version known to read it"
            record = ResourceRecord(
                id=resource_id, type=rtype, name=name.rsplit("/", 1)[-1], api_version=version, deployment=""
            )
        return self.refusal(record)

    def _read(self, resource_id: str, api_version: str) -> dict[str, Any] | None:
        return self.arm.get_resource(resource_id, api_version)

    def _made_by_zone(self, record: ResourceRecord) -> bool:
        """ARM's record of the deployment the state names lists this ID (only deployments the config renders or
        state records: a run named in a record alone is not enough)."""
        deployment = self._deployment(record.deployment)
        if deployment is None:
            return False
        if deployment.name not in self._created:
            remote = self.arm.get_deployment(deployment)
            ops = self.arm.operations(deployment) if remote is not None else []
            if remote is not None and str((remote.get("tags") or {}).get(MANAGED_TAG, "true")).lower() != "true":
                remote, ops = None, []
            self._created[deployment.name] = {i.lower() for i in applied_ids(remote, ops)} if remote else set()
        return record.id.lower() in self._created[deployment.name]

    def _deployment(self, name: str) -> Deployment | None:
        if name in self.planned:
            return self.planned[name]
        recorded = self.doc.deployments.get(name)
        return from_record(recorded, self.doc.location or "") if recorded is not None else None
