"""The CycleCloud, cyclecloud-slurm and Slurm versions hpclz renders for, as one supported triple.

CycleCloud version -> cyclecloud-slurm project version -> the Slurm builds that release ships.
cyclecloud-slurm 3.0.11 (Azure/cyclecloud-slurm@b26ab06:project.ini, `slurm.version` Config.Entries) lists exactly
24.05.4-2 and 23.11.10-2; any other build has no package in the release and the nodes install no Slurm
(Azure/cyclecloud-slurm-workspace#141, #346). The 3.x projects need CycleCloud 8.4 or newer
(Azure/cyclecloud-slurm@b26ab06:README.md, "Slurm Clusters in CycleCloud versions < 8.4.0"); hpclz pins the one
CycleCloud release its bootstrap is written for.
"""

from __future__ import annotations

SUPPORTED_CLUSTER_VERSIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "8.7.1": {"3.0.11": ("23.11.10-2", "24.05.4-2")},
}


def describe_supported() -> str:
    return "; ".join(
        f"CycleCloud {cc} + cyclecloud-slurm {project} + Slurm {'/'.join(builds)}"
        for cc, projects in SUPPORTED_CLUSTER_VERSIONS.items()
        for project, builds in projects.items()
    )
