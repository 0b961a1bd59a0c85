"""Storage template context: blob lifecycle rules, Managed Lustre with HSM, NetApp pool and volumes, shared NFS."""

from __future__ import annotations

from typing import Any

from hpclz.errors import ExitCode, HpclzError
from hpclz.render.roles import assignments
from hpclz.render.zone import Zone

TIB = 1024**4
GIB = 1024**3


def _lifecycle_rules(zone: Zone) -> list[dict[str, Any]]:
    blob = zone.blob_new
    if blob is None:
        return []
    life = blob.lifecycle
    steps = {
        "tierToCool": life.cool_after_days,
        "tierToCold": life.cold_after_days,
        "tierToArchive": life.archive_after_days,
        "delete": life.delete_after_days,
    }
    base = {action: {"daysAfterModificationGreaterThan": days} for action, days in steps.items() if days}
    if not base:
        return []
    actions: dict[str, Any] = {"baseBlob": base}
    if life.delete_after_days:
        # Old versions and snapshots would otherwise outlive the blob they belong to.
        actions["version"] = {"delete": {"daysAfterCreationGreaterThan": life.delete_after_days}}
        actions["snapshot"] = {"delete": {"daysAfterCreationGreaterThan": life.delete_after_days}}
    rule = {"enabled": True, "name": "hpclz-lifecycle", "type": "Lifecycle"}
    rule["definition"] = {"actions": actions, "filters": {"blobTypes": ["blockBlob"]}}
    return [rule]


def _lustre(zone: Zone) -> dict[str, Any] | None:
    lustre = zone.lustre_new
    if lustre is None:
        return None
    hsm = None
    if lustre.hsm is not None:
        if zone.blob_new is None:
            raise HpclzError(
                "storage.lustre.hsm: the HSM container must live in the blob account hpclz creates "
                "(storage.blob.mode: new)",
                exit_code=ExitCode.CONFIG_INVALID,
            )
        hsm = {
            "container": lustre.hsm.container,
            "logging": lustre.hsm.container[:58] + "-logs",
            "import_prefix": lustre.hsm.import_prefix,
        }
    return {"name": zone.lustre_name, "spec": lustre, "hsm": hsm}


def _netapp(zone: Zone) -> dict[str, Any] | None:
    netapp = zone.netapp_new
    if netapp is None:
        return None
    clients = [v.cidr for v in zone.subnets if v.hosts_vms]
    volumes = [
        {
            "name": zone.netapp_volume(v),
            "spec": v,
            "path": f"storage.netapp.volumes[{v.name}]",
            "bytes": v.quota_gib * GIB,
        }
        for v in netapp.volumes
    ]
    return {
        "account": zone.netapp_account,
        "pool": zone.netapp_pool,
        "spec": netapp,
        "pool_bytes": netapp.pool_size_tib * TIB,
        "clients": ",".join(clients),
        "volumes": volumes,
    }


def _shared(zone: Zone) -> dict[str, Any] | None:
    files = zone.shared_files
    if files is None:
        return None
    shares = [
        {"name": "home", "quota": files.home_gib, "path": "storage.shared.home_gib"},
        {"name": "sched", "quota": files.sched_gib, "path": "storage.shared.sched_gib"},
    ]
    return {"account": zone.shared_account_name, "spec": files, "shares": shares}


def storage(zone: Zone) -> dict[str, Any]:
    lustre = _lustre(zone)
    containers = []
    if zone.blob_new:
        containers = [
            {
                "name": c.name,
                "purpose": c.purpose,
                "path": f"storage.blob.containers[{c.name}]",
                "immutable": c.immutable,
            }
            for c in zone.blob_new.containers
        ]
        # CycleCloud's locker: where it stages the Slurm project for the nodes.
        containers.append(
            {"name": "cyclecloud", "purpose": "general", "path": "compute.cyclecloud", "immutable": False}
        )
    if lustre and lustre["hsm"]:
        containers.append(
            {"name": lustre["hsm"]["logging"], "purpose": "general", "path": "storage.lustre.hsm", "immutable": False}
        )
    return {
        "containers": containers,
        "lifecycle_rules": _lifecycle_rules(zone),
        "lustre": lustre,
        "netapp": _netapp(zone),
        "shared": _shared(zone),
        "assignments": assignments(zone, "storage"),
    }
