"""Azure NetApp Files' documented refusals of snapshot policies, so a policy Azure would refuse fails here too.

"Snapshot policy creation fails with the error `Total number of snapshots to keep exceeds 255`. Each volume can have
a maximum of 255 snapshots ... The maximum includes the sum of all hourly, daily, weekly, and monthly snapshots."
(learn.microsoft.com/azure/azure-netapp-files/troubleshoot-snapshot-policies). The message is Azure's; its error
code is not documented, so the stand-in answers with ARM's generic BadRequest.
"""

from __future__ import annotations

from typing import Any

SNAPSHOT_POLICY = "microsoft.netapp/netappaccounts/snapshotpolicies"
MAX_SNAPSHOTS = 255
SCHEDULES = ("hourlySchedule", "dailySchedule", "weeklySchedule", "monthlySchedule")


def snapshots_over_limit(rtype: str, body: dict[str, Any]) -> tuple[str, str] | None:
    """(code, message) when a snapshot policy PUT keeps more snapshots than a volume can hold."""
    if rtype.lower() != SNAPSHOT_POLICY:
        return None
    props = body.get("properties") or {}
    kept = 0
    for schedule in SCHEDULES:
        count = (props.get(schedule) or {}).get("snapshotsToKeep", 0)
        kept += count if isinstance(count, int) else 0
    if kept <= MAX_SNAPSHOTS:
        return None
    return "BadRequest", f"Total number of snapshots to keep exceeds {MAX_SNAPSHOTS}"
