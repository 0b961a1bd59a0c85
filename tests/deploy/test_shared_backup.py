"""backup.shared on the stand-in, through the real SDK clients: the NetApp snapshot policy and the
Azure Files share soft delete are deployed, kept by a plain destroy with the data they protect, and removed by
--include-data; a policy keeping more than 255 snapshots is refused as Azure NetApp Files refuses it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import RunCli
from tests.support.arm_standin import ArmStandIn

POLICY = "Microsoft.NetApp/netAppAccounts/snapshotPolicies"
VOLUME = "Microsoft.NetApp/netAppAccounts/capacityPools/volumes"
FILE_SERVICE = "Microsoft.Storage/storageAccounts/fileServices"


def _of(arm: ArmStandIn, type_: str) -> list[dict[str, Any]]:
    return [r for r in arm.world.resources.values() if r["type"] == type_]


def test_netapp_snapshot_policy_is_deployed_kept_with_the_volumes_and_removed_with_data(
    arm: ArmStandIn, manufacturing: Path, run_cli: RunCli
) -> None:
    deployed = run_cli("deploy", str(manufacturing), "--yes")
    assert deployed.exit_code == 0, deployed.stdout + deployed.stderr
    [policy] = _of(arm, POLICY)
    assert policy["properties"]["dailySchedule"] == {"hour": 1, "minute": 0, "snapshotsToKeep": 7}
    volumes = {r["name"].rsplit("/", 1)[-1]: r for r in _of(arm, VOLUME)}
    for name in ("vol-cae-hpclz-home-test-weu", "vol-cae-hpclz-sched-test-weu"):
        assert volumes[name]["properties"]["dataProtection"]["snapshot"]["snapshotPolicyId"].lower() == (
            policy["id"].lower()
        )

    # Plain destroy keeps the volumes (data) and so the policy they use: snapshots keep being taken.
    assert run_cli("destroy", str(manufacturing), "--yes").exit_code == 0
    assert _of(arm, POLICY) and len(_of(arm, VOLUME)) == 4

    gone = run_cli("destroy", str(manufacturing), "--yes", "--include-data")
    assert gone.exit_code == 0, gone.stdout + gone.stderr
    assert _of(arm, POLICY) == [] and _of(arm, VOLUME) == []


def test_a_policy_over_255_snapshots_is_refused_as_azure_netapp_files_refuses_it(
    arm: ArmStandIn, manufacturing: Path, run_cli: RunCli
) -> None:
    # HPCLZ-MNT-032 stops this at validate; suppressed here so the stand-in's answer is what the user sees.
    text = manufacturing.read_text(encoding="utf-8").replace(
        "shared: {enabled: true, daily_snapshots: 7, weekly_snapshots: 4}",
        "shared: {enabled: true, hourly_snapshots: 200, daily_snapshots: 30, weekly_snapshots: 52}",
    )
    manufacturing.write_text(text + "\nsuppress: [HPCLZ-MNT-032]\n", encoding="utf-8")
    result = run_cli("deploy", str(manufacturing), "--yes")
    assert result.exit_code != 0
    assert "Total number of snapshots to keep exceeds 255" in result.stdout + result.stderr
    assert _of(arm, POLICY) == []


def test_share_soft_delete_is_deployed_and_kept_with_the_shares(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    deployed = run_cli("deploy", str(zone), "--yes")
    assert deployed.exit_code == 0, deployed.stdout + deployed.stderr
    [service] = _of(arm, FILE_SERVICE)
    assert service["properties"]["shareDeleteRetentionPolicy"] == {"enabled": True, "days": 14}
    assert run_cli("destroy", str(zone), "--yes").exit_code == 0
    assert _of(arm, FILE_SERVICE) and len(_of(arm, "Microsoft.Storage/storageAccounts/fileServices/shares")) == 2
