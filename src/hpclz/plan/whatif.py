"""Online plan: ARM what-if results mapped into the change-set model, with known noise filtered.

Input is the what-if result as ARM returns it (the final body of the `whatIf` long-running
operation: `{"status", "properties": {"changes": [...]}}`, or an SDK `WhatIfOperationResult`'s
`as_dict()`, whose keys are snake_case). Change types follow learn.microsoft.com `ChangeType`:
Create, Delete, Modify, Deploy, NoChange, Ignore, Unsupported; property changes: Create, Delete,
Modify, Array, NoEffect.

What-if reports properties that are read-only or that the resource provider sets by default as
changes (github.com/Azure/arm-template-whatif/issues/276, /213, /383): those are filtered as noise
and kept on the change (`--show-noise` prints them), so nothing is hidden without a count.
"""

from __future__ import annotations

import re
from typing import Any

from hpclz.errors import ExitCode, HpclzError
from hpclz.plan import policies
from hpclz.plan.attributes import attributes, masked, unchanged_count
from hpclz.plan.changeset import Action, ChangeSet, PropertyChange, ResourceChange, Verdict
from hpclz.plan.offline import classify
from hpclz.plan.resources import parse_resource_id, resource_label

_SNAKE = {
    "resource_id": "resourceId",
    "change_type": "changeType",
    "unsupported_reason": "unsupportedReason",
    "property_change_type": "propertyChangeType",
}

# Read-only or server-set properties: a change to them is never something a template asked for.
READ_ONLY_LEAVES = frozenset(
    {
        "provisioningState",
        "etag",
        "resourceGuid",
        "uniqueId",
        "creationTime",
        "createdAt",
        "createdTime",
        "lastModifiedTime",
        "lastModifiedAt",
        "timeCreated",
        "principalId",
        "clientId",
        "primaryEndpoints",
        "secondaryEndpoints",
        "primaryLocation",
        "secondaryLocation",
        "statusOfPrimary",
        "statusOfSecondary",
        "vmId",
        "mgsAddress",
        "clientInfo",
        "health",
        "throughputProvisionedMBps",
        "mountTargets",
        "fileSystemId",
        "customerId",
        "ipConfigurations",
    }
)

# Properties the resource provider fills in when a template leaves them out: what-if shows them as
# Delete, but an incremental PUT without them keeps the provider's default.
SERVER_DEFAULTS: dict[str, tuple[str, ...]] = {
    "microsoft.storage/storageaccounts": (
        "properties.encryption*",
        "properties.networkAcls.bypass",
        "properties.networkAcls.virtualNetworkRules",
        "properties.networkAcls.ipRules",
        "properties.keyPolicy*",
        "properties.accessTier",
        "properties.defaultToOAuthAuthentication",
        "properties.allowCrossTenantReplication",
    ),
    "microsoft.network/virtualnetworks": (
        "properties.subnets[*].properties.privateEndpointNetworkPolicies",
        "properties.subnets[*].properties.privateLinkServiceNetworkPolicies",
        "properties.subnets[*].type",
        "properties.enableDdosProtection",
        "properties.virtualNetworkPeerings",
    ),
    "microsoft.network/virtualnetworks/subnets": (
        "properties.privateEndpointNetworkPolicies",
        "properties.privateLinkServiceNetworkPolicies",
    ),
    "microsoft.network/networksecuritygroups": (
        "properties.securityRules[*].type",
        "properties.securityRules[*].properties.sourcePortRanges",
        "properties.securityRules[*].properties.destinationPortRanges",
        "properties.securityRules[*].properties.sourceAddressPrefixes",
        "properties.securityRules[*].properties.destinationAddressPrefixes",
        "properties.defaultSecurityRules",
    ),
    "microsoft.compute/virtualmachines": (
        "properties.osProfile.secrets",
        "properties.osProfile.allowExtensionOperations",
        "properties.osProfile.requireGuestProvisionSignal",
        "properties.osProfile.linuxConfiguration.provisionVMAgent",
        "properties.osProfile.linuxConfiguration.patchSettings*",
        "properties.storageProfile.osDisk.managedDisk.id",
        "properties.storageProfile.osDisk.name",
        "properties.storageProfile.imageReference.exactVersion",
        "properties.storageProfile.dataDisks",
    ),
    "microsoft.keyvault/vaults": ("properties.vaultUri", "properties.accessPolicies"),
    "microsoft.operationalinsights/workspaces": ("properties.features*", "properties.workspaceCapping*"),
}


def _normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            _SNAKE.get(k, k): (_normalized(v) if k in ("changes", "delta", "children", "properties") else v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def changes_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The `changes` list of a what-if result; a failed what-if is an Azure error, not an empty plan."""
    body = _normalized(body)
    error = body.get("error") or (body.get("properties") or {}).get("error")
    if error or str(body.get("status", "Succeeded")).lower() not in ("succeeded", ""):
        detail = error.get("message", error) if isinstance(error, dict) else error
        raise HpclzError(f"ARM what-if failed: {detail or body.get('status')}", exit_code=ExitCode.AZURE_ERROR)
    props = body.get("properties", body)
    changes = props.get("changes", [])
    return list(changes) if isinstance(changes, list) else []


# How much a what-if change type says about a resource, least first. One resource group can hold several
# hpclz deployments: each reports the others' resources as Ignore (in scope, not in its template), so
# the change type that says most wins, and an Ignore never hides another deployment's Modify.
# Change types: https://learn.microsoft.com/rest/api/resources/deployments/what-if (WhatIfChange.changeType).
_RANK = {"Ignore": 0, "NoChange": 1, "Unsupported": 2, "Deploy": 3, "Modify": 4, "Delete": 5, "Create": 5}


def whatif_changeset(results: dict[str, dict[str, Any]], *, landing_zone: str, environment: str) -> ChangeSet:
    """`results`: deployment name -> its what-if body. A resource several deployments report is merged by
    its ID into the change that says most about it."""
    changeset = ChangeSet(mode="what-if", landing_zone=landing_zone, environment=environment)
    best: dict[str, tuple[str, dict[str, Any]]] = {}
    for deployment, body in results.items():
        for raw in changes_of(body):
            key = str(raw.get("resourceId", "")).lower()
            rank = _RANK.get(str(raw.get("changeType", "")), 1)
            if key not in best or rank > _RANK.get(str(best[key][1].get("changeType", "")), 1):
                best[key] = (deployment, raw)
    for deployment, raw in best.values():
        rid = str(raw.get("resourceId", ""))
        kind = str(raw.get("changeType", ""))
        if kind == "Ignore":
            changeset.ignored.append(rid)
        elif kind == "Unsupported":
            changeset.unsupported.append(f"{rid}: {raw.get('unsupportedReason', 'no reason given')}")
        else:
            changeset.resources.append(map_change(raw, deployment))
    return changeset


def map_change(raw: dict[str, Any], deployment: str) -> ResourceChange:
    rid = str(raw.get("resourceId", ""))
    rtype, name = parse_resource_id(rid)
    kind = str(raw.get("changeType", ""))
    data = policies.is_data_bearing(rtype)
    shown = raw.get("after") or raw.get("before")
    base = ResourceChange(
        id=rid,
        type=rtype,
        name=name,
        label=resource_label(rtype, name, rid, shown if isinstance(shown, dict) else None),
        deployment=deployment,
        action=Action.NO_CHANGE,
        data_bearing=data,
    )
    if kind == "Create":
        created = raw.get("after")
        created = created if isinstance(created, dict) else {}
        update = {"action": Action.CREATE, "verdict": policies.create_verdict(rtype)}
        return base.model_copy(update={**update, "attributes": attributes(rtype, created)})
    if kind == "Delete":
        return base.model_copy(update={"action": Action.DELETE, "verdict": policies.delete_verdict(rtype, data)})
    if kind == "NoChange":
        return base
    before, after = raw.get("before") or {}, raw.get("after") or {}
    for change, judged, was, now in flatten(raw.get("delta") or [], "", before, after):
        change.verdict = policies.property_verdict(rtype, judged, was, now, data, after)
        change.noise_reason = noise_reason(rtype, change)
        (base.noise if change.noise_reason else base.changes).append(change)
    for change in [*base.changes, *base.noise]:  # judged on the real values above; shown masked
        change.before = masked(rtype, change.path, change.before)
        change.after = masked(rtype, change.path, change.after)
    base.unchanged_attributes = unchanged_count(after, [*base.changes, *base.noise]) if base.changes else 0
    classify(base)
    if kind == "Deploy" and not base.changes and not base.noise:
        base.action = Action.MODIFY
        base.verdict = Verdict(reason="ARM redeploys it; what-if cannot tell which properties change")
    return base


def _join(parent: str, child: str) -> str:
    if not parent or not child:  # an array directly inside an array has no path of its own
        return parent or child
    return f"{parent}[{child}]" if child.isdigit() else f"{parent}.{child}"


def _lookup(body: Any, path: str) -> Any:
    node = body
    for part in re.findall(r"[^.\[\]]+", path):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


_KINDS = {"Create": Action.CREATE, "Delete": Action.DELETE, "Modify": Action.MODIFY, "NoEffect": Action.MODIFY}

# One flattened property change, with what its verdict is judged on: the change itself, or for an item of an
# array of plain values the whole array (an address range added is judged against every range, before and after).
Flat = tuple[PropertyChange, str, Any, Any]


def flatten(deltas: list[dict[str, Any]], parent: str, before: Any, after: Any) -> list[Flat]:
    """Nested what-if deltas as flat property paths, as ARM returns them: an `Array` change lists its items
    as children whose `path` is the index (`0`, `1`), each Create, Delete or Modify; an item that is an object
    carries its own property changes as children; an array nested directly in an array has no path of its
    own (azure-cli's what-if formatter tests, test_nested_array_changes; tests/fixtures/whatif)."""
    out: list[Flat] = []
    for delta in deltas:
        path = _join(parent, str(delta.get("path") or ""))
        kind = str(delta.get("propertyChangeType", "Modify"))
        children = delta.get("children") or []
        if kind == "Array":
            out.extend(_array(path, children, before, after))
        elif children:  # an object inside an array: its own property changes are the children
            out.extend(flatten(children, path, before, after))
        else:
            out.append(_leaf_change(path, kind, delta.get("before"), delta.get("after")))
    return out


def _array(path: str, children: list[dict[str, Any]], before: Any, after: Any) -> list[Flat]:
    old, new = _lookup(before, path), _lookup(after, path)
    if not children:  # no items named: the array before and after is all there is to show
        return [(PropertyChange(path=path, kind=Action.MODIFY, before=old, after=new), path, old, new)]
    scalars = all(not isinstance(v, dict | list) for v in [*(old or []), *(new or [])])
    if not scalars or any(c.get("children") for c in children):
        return flatten(children, path, before, after)
    items = []
    for child in children:
        change, _, _, _ = _leaf_change(
            _join(path, str(child.get("path") or "")),
            str(child.get("propertyChangeType", "Modify")),
            child.get("before"),
            child.get("after"),
        )
        items.append((change, path, old, new))
    return items


def _leaf_change(path: str, kind: str, before: Any, after: Any) -> Flat:
    change = PropertyChange(path=path, kind=_KINDS.get(kind, Action.MODIFY), before=before, after=after)
    if kind == "NoEffect":
        change.noise_reason = "NoEffect: ARM ignores this property (read-only)"
    return change, path, before, after


def _leaf(path: str) -> str:
    return re.findall(r"[^.\[\]]+", path)[-1] if path else ""


def _same_value(before: Any, after: Any) -> bool:
    if isinstance(before, str) and isinstance(after, str):
        return before.replace(" ", "").lower() == after.replace(" ", "").lower()
    return False


def noise_reason(rtype: str, change: PropertyChange) -> str:
    if change.noise_reason:
        return change.noise_reason
    leaf = _leaf(change.path)
    if leaf in READ_ONLY_LEAVES:
        return f"{leaf} is read-only, set by Azure"
    if leaf == "id" and (change.kind is Action.DELETE or _same_value(change.before, change.after)):
        return "a resource ID Azure fills in"
    if change.kind is Action.MODIFY and _same_value(change.before, change.after):
        return "differs only in case or spacing, which ARM ignores"
    shape = policies.wildcard(change.path)
    if change.kind is Action.DELETE and any(
        policies.path_matches(shape, pattern) for pattern in SERVER_DEFAULTS.get(rtype.lower(), ())
    ):
        return "a default the resource provider sets when the template leaves it out"
    return ""
