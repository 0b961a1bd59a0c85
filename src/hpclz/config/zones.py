"""Availability zones: the logical zone numbers Azure gives a region's zonal resources.

ARM takes a zone as a string in a resource's `zones` array (Microsoft.Compute virtualMachines and
Microsoft.StorageCache amlFilesystems alike); CycleCloud takes it as a node's or nodearray's `Zone` attribute
(Azure/cyclecloud-slurm@b26ab06:templates/slurm.txt, parameter SchedulerZone: "1", "2" or "3"). Zone numbers
are per subscription: zone 1 of one subscription need not be zone 1 of another
(learn.microsoft.com/azure/reliability/availability-zones-overview, "Physical and logical availability zones").
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, WithJsonSchema


def _zone_spelling(value: object) -> object:
    """YAML reads `zone: 1` as a number; the zone is the string ARM and CycleCloud take."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


AvailabilityZone = Annotated[
    Literal["1", "2", "3"],
    BeforeValidator(_zone_spelling),
    # The schema editors read takes `zone: 1` as the loader does.
    WithJsonSchema({"enum": ["1", "2", "3", 1, 2, 3], "description": "Availability zone 1, 2 or 3 of the region."}),
]
