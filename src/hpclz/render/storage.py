"""Storage template context: blob lifecycle rules, Managed Lustre with HSM, NetApp pool and volumes, shared NFS."""

from __future__ import annotations

from typing import Any

from hpclz.errors import ExitCode, HpclzError
from hpclz.render.arm import resource_id_expr
from hpclz.render.roles import LOCKER_CONTAINER, WHEEL_CONTAINER, assignments, lustre_hsm_assignments
from hpclz.render.zone import Zone

TIB = 1024**4
GIB = 1024**3
SNAPSHOT_POLICY = "hpclz-shared-snapshots"


def _lifecycle_rules(zone: Zone) -> list[dict[str, Any]]:
    """Tier only the data containers declared in storage.blob.containers, by prefix: never the CycleCloud locker
    (cluster-init the nodes run at boot) nor the Lustre HSM containers, which Lustre must read back at any time
    (an archived blob needs hours of rehydration first)."""
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
    tiered = sorted(c.name for c in blob.containers if c.name not in _hsm_containers(zone))
    if not tiered:
        return []
    filters = {"blobTypes": ["blockBlob"], "prefixMatch": [f"{name}/" for name in tiered]}
    rule["definition"] = {"actions": actions, "filters": filters}
    return [rule]


def _hsm_containers(zone: Zone) -> set[str]:
    lustre = zone.lustre_new
    return {lustre.hsm.container} if lustre is not None and lustre.hsm is not None else set()


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
        logging = lustre.hsm.container[:58] + "-logs"
        hsm = {
            "container": lustre.hsm.container,
            "logging": logging,
            "import_prefix": lustre.hsm.import_prefix,
            "depends_on": _hsm_depends_on(zone, lustre.hsm.container, logging),
        }
    return {"name": zone.lustre_name, "spec": lustre, "hsm": hsm}


def _hsm_depends_on(zone: Zone, container: str, logging: str) -> list[str]:
    """Everything Lustre reads at creation: both containers, the account's private DNS record (it reaches the
    account through the endpoint), and the resource provider's roles, which must exist before creation
    (MicrosoftDocs/azure-stack-docs@f1e86c5:azure-managed-lustre/amlfs-prerequisites.md)."""
    type_ = "Microsoft.Storage/storageAccounts/blobServices/containers"
    out = [resource_id_expr(type_, zone.storage_account_name, "default", c) for c in (container, logging)]
    if zone.storage_account_pe and zone.dns_zones:
        endpoint = zone.names.name("private_endpoint", "blob")
        out.append(resource_id_expr("Microsoft.Network/privateEndpoints/privateDnsZoneGroups", endpoint, "default"))
    return out + [a.name for a in lustre_hsm_assignments(zone)]


def _snapshot_policy(zone: Zone) -> dict[str, Any] | None:
    """backup.shared's snapshot policy for the NetApp home and /sched volumes: daily at backup.time_utc, weekly on
    Sunday and monthly on the 1st at the same time, hourly at its minute (Microsoft.NetApp 2024-07-01
    SnapshotPolicyProperties: hours in UTC)."""
    shared = zone.config.backup.shared
    if not (shared.enabled and zone.shared_netapp_volumes()):
        return None
    hour, minute = (int(part) for part in zone.config.backup.time_utc.split(":"))
    at: dict[str, int | str] = {"hour": hour, "minute": minute}
    schedules: dict[str, tuple[dict[str, int | str], int]] = {
        "hourlySchedule": ({"minute": minute}, shared.hourly_snapshots),
        "dailySchedule": (at, shared.daily_snapshots),
        "weeklySchedule": ({"day": "Sunday", **at}, shared.weekly_snapshots),
        "monthlySchedule": ({"daysOfMonth": "1", **at}, shared.monthly_snapshots),
    }
    kept = {k: {**when, "snapshotsToKeep": keep} for k, (when, keep) in schedules.items() if keep}
    return {"name": SNAPSHOT_POLICY, "properties": {"enabled": True, **kept}}


def _netapp(zone: Zone) -> dict[str, Any] | None:
    netapp = zone.netapp_new
    if netapp is None:
        return None
    snapshots = _snapshot_policy(zone)
    clients = [v.cidr for v in zone.subnets if v.hosts_vms]
    volumes = [
        {
            "name": zone.netapp_volume(v),
            "spec": v,
            "path": f"storage.netapp.volumes[{v.name}]",
            "bytes": v.quota_gib * GIB,
            "unix_permissions": v.unix_permissions,
            "snapshot_policy": None,
        }
        for v in netapp.volumes
    ]
    volumes += [
        {
            "name": zone.netapp_volume(v),
            "spec": v,
            "path": f"storage.shared.{role}_gib",
            "bytes": v.quota_gib * GIB,
            # Users must traverse the volume's root to reach their homes; CCWS's ANF volume sets the same
            # (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/anf.bicep, unixPermissions '0755').
            "unix_permissions": "0755",
            "snapshot_policy": snapshots["name"] if snapshots else None,
        }
        for role, v in zone.shared_netapp_volumes()
    ]
    return {
        "account": zone.netapp_account,
        "pool": zone.netapp_pool,
        "spec": netapp,
        "pool_bytes": netapp.pool_size_tib * TIB,
        "clients": ",".join(clients),
        "volumes": volumes,
        "snapshot_policy": snapshots,
    }


def _shared(zone: Zone) -> dict[str, Any] | None:
    files = zone.shared_files
    if files is None:
        return None
    shares = [
        {"name": "home", "quota": files.home_gib, "path": "storage.shared.home_gib"},
        {"name": "sched", "quota": files.sched_gib, "path": "storage.shared.sched_gib"},
    ]
    backup = zone.config.backup.shared
    # Share soft delete is the one protection Azure offers NFS shares declaratively (see hpclz.config.backup).
    soft_delete = backup.soft_delete_days if backup.enabled else None
    return {"account": zone.shared_account_name, "spec": files, "shares": shares, "soft_delete_days": soft_delete}


def locker(zone: Zone) -> dict[str, Any]:
    """CycleCloud's locker account: the container CycleCloud stages the Slurm project in (LOCKER_CONTAINER, as
    CCWS's installer names it: Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/files-to-load/cyclecloud_install.py)
    and the one `hpclz deploy` uploads its own wheel to for the scheduler (WHEEL_CONTAINER)."""
    return {
        "account": zone.locker_account_name,
        "private_endpoint": zone.locker_pe,
        "containers": [
            {"name": LOCKER_CONTAINER, "purpose": "cluster-init"},
            {"name": WHEEL_CONTAINER, "purpose": "hpclz wheel"},
        ],
    }


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
    if lustre and lustre["hsm"]:
        containers.append(
            {"name": lustre["hsm"]["logging"], "purpose": "general", "path": "storage.lustre.hsm", "immutable": False}
        )
    return {
        "containers": containers,
        "locker": locker(zone),
        "lifecycle_rules": _lifecycle_rules(zone),
        "lustre": lustre,
        "netapp": _netapp(zone),
        "shared": _shared(zone),
        "assignments": assignments(zone, "storage"),
    }
