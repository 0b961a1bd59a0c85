"""No silent adoption: what deploy would create must not already exist, unless this zone made it or someone adopted
it explicitly (`hpclz state adopt`).

ARM deploys in incremental mode and a PUT to an existing resource's ID updates it in place: "Resource Manager tries
to update the resource" with the template's properties
(learn.microsoft.com/azure/azure-resource-manager/templates/deployment-modes#incremental-mode). A resource another
team made under the name hpclz would give it (a platform team's Log Analytics workspace) would have its tags replaced
and its settings (retention 730 -> 90 days) overwritten, shown as `+ create`, and then be deleted with the zone.
So before the first write deploy reads each top-level resource it is about to create: one that exists and is not
tagged as this zone's (hpclz.deploy.ownership.tag_refusal) stops the deploy with the reason.

Adopting records the resource as Azure has it (its body, tags included) under the deployment that renders it:
the next plan then shows, property by property, what deploy will change on it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hpclz.azure.arm import Arm
from hpclz.deploy.ownership import GROUP_ID, UNTAGGABLE, is_extension, tag_refusal
from hpclz.errors import ExitCode, HpclzError
from hpclz.plan.changeset import Action, ChangeSet
from hpclz.plan.resources import SUBSCRIPTION_PLACEHOLDER, DesiredResource, desired_resources
from hpclz.render.model import DATA_BEARING_TYPES, DATA_TAG, DeploymentPlan
from hpclz.state.model import ResourceRecord, StateDocument

RECORDED_KEYS = ("location", "sku", "kind", "zones", "tags", "identity", "properties", "plan")


def _concrete(resource_id: str, subscription: str) -> str:
    return resource_id.replace(SUBSCRIPTION_PLACEHOLDER, subscription)


def _checked(resource_id: str, rtype: str) -> bool:
    """Top-level resources and groups with literal names that take tags: a child or extension resource is created in
    its parent, which is checked itself (or is an existing resource the config names on purpose); an untaggable one
    (a policy assignment, a lock) carries no tag to tell whose it is, and one an interrupted run of this zone made must
    not stop the rerun."""
    if "[" in resource_id or is_extension(resource_id):
        return False
    return GROUP_ID.match(resource_id) is not None or (rtype.count("/") == 1 and rtype.lower() not in UNTAGGABLE)


def taken_over(arm: Arm, changes: ChangeSet, plan: DeploymentPlan, doc: StateDocument | None) -> list[str]:
    """'<id>: <why>' for each resource the change set creates that exists in Azure without this zone's tags."""
    recorded = {r.id.lower() for r in (doc.resources if doc else [])}
    versions = {d.id.lower(): d.api_version for d in desired_resources(plan)}
    subscription = arm.subscription_id
    creates = [
        (_concrete(r.id, subscription), versions.get(r.id.lower(), ""))
        for r in changes.resources
        if r.action is Action.CREATE and _checked(r.id, r.type)
    ]
    creates = [(rid, version) for rid, version in creates if rid.lower() not in recorded]
    groups = {rid.split("/")[4].lower() for rid, _ in creates if "/resourcegroups/" in rid.lower()}
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="hpclz-adoption") as pool:
        present = {g for g, found in zip(groups, pool.map(arm.get_group, groups), strict=True) if found}

        def read(item: tuple[str, str]) -> dict[str, Any] | None:
            rid, version = item
            group = GROUP_ID.match(rid)
            if group:
                return arm.get_group(group.group(2)) if group.group(2).lower() in present else None
            if rid.split("/")[4].lower() not in present or not version:
                return None  # in a group that does not exist yet: nothing there to take over
            return arm.get_resource(rid, version)

        found = list(pool.map(read, creates))
    refused = []
    for (rid, _), live in zip(creates, found, strict=True):
        why = None if live is None else tag_refusal(live.get("tags") or {}, plan.landing_zone, plan.environment)
        if why:
            refused.append(f"{rid}: exists and is {why}")
    return refused


def refuse_takeover(refused: list[str], config_file: str) -> None:
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise HpclzError(
            f"{config_file}: refusing to take over a resource this zone did not create: {refused[0]}{more}; "
            "nothing was deployed",
            exit_code=ExitCode.FAILED,
            hint=f"rename it in the config, or adopt it on purpose: hpclz state adopt {config_file} ADDRESS, then "
            "review `hpclz plan` (it lists every property deploy will change)",
        )


def matching_desired(plan: DeploymentPlan, address: str, subscription: str) -> list[DesiredResource]:
    """Rendered resources an ADDRESS names: a full resource ID, or `Type/name` as plan prints it."""
    wanted = address.strip().lower()
    desired = [d for d in desired_resources(plan) if "[" not in d.id]
    by_id = [d for d in desired if _concrete(d.id, subscription).lower() == wanted]
    return by_id or [d for d in desired if f"{d.type}/{d.name}".lower() == wanted]


def adopted_record(arm: Arm, d: DesiredResource) -> ResourceRecord:
    """The record of an existing resource as Azure returns it, under the deployment that renders it."""
    rid = _concrete(d.id, arm.subscription_id)
    group = GROUP_ID.match(rid)
    live = arm.get_group(group.group(2)) if group else arm.get_resource(rid, d.api_version)
    if live is None:
        raise HpclzError(f"{rid} does not exist in Azure: there is nothing to adopt", exit_code=ExitCode.USAGE)
    tags = live.get("tags") or {}
    return ResourceRecord(
        id=str(live.get("id") or rid),
        type=d.type,
        name=d.name.rsplit("/", 1)[-1],
        api_version=d.api_version,
        deployment=d.deployment,
        data_bearing=str(tags.get(DATA_TAG, "")).lower() == "true" or d.type.lower() in DATA_BEARING_TYPES,
        properties={k: live[k] for k in RECORDED_KEYS if k in live},
    )
