"""backup.shared as render writes it: share soft delete on the Azure Files NFS account (Azure Backup
does not support NFS shares: learn.microsoft.com/azure/backup/azure-file-share-support-matrix), a snapshot policy on
the NetApp home and /sched volumes, and nothing when it is off."""

from __future__ import annotations

from typing import Any

from hpclz.render.model import DeploymentPlan
from tests.arm.test_schema_gate import schema_findings
from tests.render.conftest import preset_plan, variant

FILE_SERVICE = "Microsoft.Storage/storageAccounts/fileServices"
SHARE = "Microsoft.Storage/storageAccounts/fileServices/shares"


def _storage(plan: DeploymentPlan) -> dict[str, Any]:
    [deployment] = [d for d in plan.deployments if d.component == "storage"]
    return deployment.template


def _all(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in resources:
        out += [r, *_all(r.get("resources", []))]
    return out


def _of(template: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    return [r for r in _all(template["resources"]) if r["type"] == type_]


def test_finance_turns_on_share_soft_delete_for_home_and_sched() -> None:
    template = _storage(preset_plan("finance"))
    [service] = _of(template, FILE_SERVICE)
    assert service["name"] == "striskgridnfsprodweufx/default"
    assert service["properties"] == {"shareDeleteRetentionPolicy": {"enabled": True, "days": 30}}
    shares = _of(template, SHARE)
    assert sorted(s["name"].rsplit("/", 1)[-1] for s in shares) == ["home", "sched"]
    # The policy is in place before a share exists, so no share is ever created unprotected.
    assert all(any("fileServices'" in d for d in s["dependsOn"]) for s in shares)
    assert schema_findings(template) == []


def test_no_soft_delete_when_backup_or_backup_shared_is_off() -> None:
    assert _of(_storage(preset_plan("energy")), FILE_SERVICE) == []

    def shared_off(doc: dict[str, Any]) -> None:
        doc["backup"]["shared"]["enabled"] = False

    assert _of(_storage(variant("ai-training", shared_off)), FILE_SERVICE) == []


def test_manufacturing_snapshots_the_shared_netapp_volumes_only() -> None:
    template = _storage(preset_plan("manufacturing"))
    [policy] = _of(template, "snapshotPolicies")
    assert policy["name"] == "hpclz-shared-snapshots"
    # Property names and shapes as in azure-rest-api-specs' SnapshotPolicies_List example (Microsoft.NetApp
    # 2024-07-01): {"snapshotsToKeep", "hour", "minute"} daily, "day" a weekday name for weekly.
    assert policy["properties"] == {
        "enabled": True,
        "dailySchedule": {"hour": 1, "minute": 0, "snapshotsToKeep": 7},
        "weeklySchedule": {"day": "Sunday", "hour": 1, "minute": 0, "snapshotsToKeep": 4},
    }
    volumes = {v["properties"]["creationToken"]: v for v in _of(template, "volumes")}
    for name in ("hpclz-home", "hpclz-sched"):
        snapshot = volumes[name]["properties"]["dataProtection"]["snapshot"]
        assert snapshot["snapshotPolicyId"].endswith("'anf-cae-test-weu', 'hpclz-shared-snapshots')]")
    # The user's own volumes (storage.netapp.volumes) are theirs to protect.
    assert all("dataProtection" not in volumes[n]["properties"] for n in ("apps", "results"))
    assert schema_findings(template) == []


def test_hourly_and_monthly_schedules_follow_the_config() -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["backup"] = {
            "time_utc": "23:30",
            "shared": {"enabled": True, "hourly_snapshots": 24, "daily_snapshots": 0, "monthly_snapshots": 12},
        }

    [policy] = _of(_storage(variant("manufacturing", edit)), "snapshotPolicies")
    assert policy["properties"] == {
        "enabled": True,
        "hourlySchedule": {"minute": 30, "snapshotsToKeep": 24},
        "weeklySchedule": {"day": "Sunday", "hour": 23, "minute": 30, "snapshotsToKeep": 4},
        # Day 1 exists in every month (snapshots-manage-policy: a day past a month's end skips that month).
        "monthlySchedule": {"daysOfMonth": "1", "hour": 23, "minute": 30, "snapshotsToKeep": 12},
    }
