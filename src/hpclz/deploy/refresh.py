"""Read every recorded resource back from Azure, a few at a time (refresh, the default of plan and deploy),
and, for `deploy --refresh-only`, record in state what Azure has instead of what hpclz applied."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hpclz.azure.arm import Arm
from hpclz.plan.changeset import ChangeSet, ResourceChange
from hpclz.plan.drift import GROUP, as_azure_has_it, drift_of
from hpclz.state.model import ResourceRecord, StateDocument

PARALLEL_READS = 8  # bounded: ARM throttles reads per principal (12000/h per subscription, see request-limits)


def _read(arm: Arm, record: ResourceRecord) -> dict[str, Any] | None:
    if record.type.lower() == GROUP:
        return arm.get_group(record.name)
    return arm.get_resource(record.id, record.api_version)


def read_back(arm: Arm, doc: StateDocument) -> dict[str, dict[str, Any] | None]:
    """Resource ID -> what Azure has now (None: not found)."""
    with ThreadPoolExecutor(max_workers=PARALLEL_READS, thread_name_prefix="hpclz-refresh") as pool:
        found = pool.map(lambda r: _read(arm, r), doc.resources)
        return {r.id: live for r, live in zip(doc.resources, found, strict=True)}


def attach_drift(changes: ChangeSet, doc: StateDocument | None, live: dict[str, dict[str, Any] | None]) -> None:
    """Drift of the resources the change set does not already change; their deployments run again."""
    changes.refreshed = True
    if doc is None:
        return
    changing = {r.id.lower() for r in changes.changed_resources}
    for record in doc.resources:
        if record.id.lower() in changing or record.pending_delete or record.id not in live:
            continue
        drifted = drift_of(record, live[record.id])
        if drifted is None:
            continue
        changes.drift.append(drifted)
        if record.deployment not in changes.resubmit:
            changes.resubmit.append(record.deployment)


def _as_azure_has_it(record: ResourceRecord, live: dict[str, Any]) -> ResourceRecord:
    if "properties" in record.properties:
        body = as_azure_has_it(record.properties, live)
    else:  # a record that kept only `properties` (hpclz.plan.offline.comparable)
        body = as_azure_has_it({"properties": record.properties}, live)["properties"]
    return record.model_copy(update={"properties": body})


def record_drift(
    doc: StateDocument, live: dict[str, dict[str, Any] | None], drifted: list[ResourceChange]
) -> StateDocument:
    """State as Azure has it (terraform's `apply -refresh-only`): a resource deleted outside hpclz leaves state,
    a changed one keeps Azure's values, and their deployments are marked drifted so the next plan compares the
    config with them instead of calling the deployment unchanged. Nothing is written to Azure."""
    ids = {r.id.lower() for r in drifted}
    resources = []
    for record in doc.resources:
        if record.id.lower() not in ids:
            resources.append(record)
        elif live.get(record.id) is not None:
            resources.append(_as_azure_has_it(record, live[record.id] or {}))
    names = {r.deployment for r in drifted}
    deployments = {
        name: record.model_copy(update={"drifted": True}) if name in names else record
        for name, record in doc.deployments.items()
    }
    return doc.model_copy(update={"resources": resources, "deployments": deployments})
