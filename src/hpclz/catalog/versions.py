"""The CycleCloud / cyclecloud-slurm / Slurm triples hpclz renders, the older ones it upgrades from, and the road.

A triple is strict: a cyclecloud-slurm release installs only the Slurm builds its project.ini lists, and any other
build leaves the nodes without Slurm (Azure/cyclecloud-slurm-workspace#141 and #346). Each row names where the three
versions were seen together. The table, not a constant, is what rules, render and plan read: the next triple is one
more row.

Slurm's upgrade rules (https://slurm.schedmd.com/upgrades.html, "Compatibility Window"): "Slurm has long supported
in-place upgrades from the previous two major releases. With the change to a 6-month cycle in 2024, Slurm 24.11
introduced compatibility with the previous three major releases. For example, slurmdbd 25.11.x is capable of
accepting messages from slurmctld daemons and commands with a version of 25.11.x, 25.05.x, 24.11.x, or 24.05.x."
The same guide upgrades slurmdbd first, then slurmctld, then slurmd and the clients; the release notes say it too:
"If using the slurmdbd (Slurm DataBase Daemon) you must update this first"
(https://raw.githubusercontent.com/SchedMD/slurm/slurm-24.11/RELEASE_NOTES, IMPORTANT NOTES).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

Role = Literal["current", "stepping_stone", "upgrade_source"]

# Slurm's major releases in order (year.month of the first release, upgrades.html "Release Cycle"): the skew between
# two builds is the distance between their majors in this list, never arithmetic on the numbers.
SLURM_MAJORS: tuple[str, ...] = ("22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11", "26.05")
# From this major on, a daemon accepts the three previous majors; before it, two (upgrades.html, above).
THREE_BACK_FROM = "24.11"
UPGRADES_GUIDE = "https://slurm.schedmd.com/upgrades.html"
# Microsoft's CycleCloud image, as CCWS deploys it: publisher, offer and SKU of
# `azurecyclecloud:azure-cyclecloud:cyclecloud8-gen2:<version>` (Azure/cyclecloud-slurm-workspace@bc0fc1b:
# bicep/mainTemplate.bicep:13), with the purchase plan built from the same three parts (bicep/vm.bicep:46-50).
CYCLECLOUD_IMAGE = ("azurecyclecloud", "azure-cyclecloud", "cyclecloud8-gen2")


@dataclass(frozen=True)
class StackTriple:
    cyclecloud: str
    project: str
    slurm: str
    role: Role
    # The azurecyclecloud:azure-cyclecloud:cyclecloud8-gen2 image version of this CycleCloud release; "" for a source
    # hpclz installed from packages and no longer renders.
    image_version: str
    source: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.cyclecloud, self.project, self.slurm)

    @property
    def renderable(self) -> bool:
        return self.role != "upgrade_source"

    def describe(self) -> str:
        return f"CycleCloud {self.cyclecloud} + cyclecloud-slurm {self.project} + Slurm {self.slurm}"


STACK: tuple[StackTriple, ...] = (
    StackTriple(
        "8.9.1",
        "4.0.9",
        "25.11.5",
        "current",
        "8.9.120260630",
        # CCWS 2026.07.02: bicep/mainTemplate.bicep:13 pins the image, bicep/files-to-load/initial_params.json
        # defaults Slurm to 25.11.5; cyclecloud-slurm 4.0.9 project.ini:26-27 lists exactly 25.11.5.
        "Azure/cyclecloud-slurm-workspace@bc0fc1b (2026.07.02); Azure/cyclecloud-slurm@50e6739:project.ini:19-27",
    ),
    StackTriple(
        "8.9.0",
        "4.0.6",
        "25.05.5",
        "stepping_stone",
        "8.9.020260513",
        # CCWS 2026.05.22 pins image 8.9.020260513 with Slurm 25.05.5; cyclecloud-slurm 4.0.6 project.ini defaults
        # to 25.05.5. The only road from Slurm 23.11 to 25.11 within the compatibility window runs through 25.05.
        "Azure/cyclecloud-slurm-workspace@0b3f93c (2026.05.22); Azure/cyclecloud-slurm@5a819ef:project.ini",
    ),
    StackTriple(
        "8.7.1",
        "3.0.11",
        "24.05.4-2",
        "upgrade_source",
        "",
        "Azure/cyclecloud-slurm@b26ab06:project.ini (slurm.version Config.Entries 24.05.4-2, 23.11.10-2)",
    ),
    StackTriple(
        "8.7.1",
        "3.0.11",
        "23.11.10-2",
        "upgrade_source",
        "",
        "Azure/cyclecloud-slurm@b26ab06:project.ini (slurm.version Config.Entries 24.05.4-2, 23.11.10-2)",
    ),
)

CURRENT: StackTriple = next(t for t in STACK if t.role == "current")

# Each cyclecloud-slurm release's files, as its project.ini lists them ([blobs] Files): what `cyclecloud project
# fetch` brings into blobs/ and `project upload` puts in the locker (Azure/cyclecloud-slurm@50e6739:project.ini:7-8,
# docker-package.sh l.22-46). Only releases whose project.ini was read are listed.
PROJECT_BLOBS: dict[str, tuple[str, ...]] = {
    "4.0.9": (
        "azure-slurm-pkg-4.0.9.tar.gz",
        "azure-slurm-install-pkg-4.0.9.tar.gz",
        "azure_slurm_exporter-0.2.0.tar.gz",
    ),
}


def find(cyclecloud: str, project: str, slurm: str) -> StackTriple | None:
    return next((t for t in STACK if t.key == (cyclecloud, project, slurm)), None)


def marketplace_image(cyclecloud: str) -> str | None:
    """The Marketplace URN of a CycleCloud release hpclz renders, or None when the table has no image for it."""
    version = next((t.image_version for t in STACK if t.cyclecloud == cyclecloud and t.image_version), None)
    return ":".join((*CYCLECLOUD_IMAGE, version)) if version else None


def renderable() -> list[StackTriple]:
    return [t for t in STACK if t.renderable]


def describe_supported() -> str:
    return "; ".join(t.describe() for t in renderable())


def slurm_major(build: str) -> str:
    """25.11.5 and 23.11.10-2 -> 25.11 and 23.11."""
    return ".".join(build.split(".")[:2])


def skew(source: str, target: str) -> int | None:
    """How many majors `target` is ahead of `source` (negative: a downgrade); None for a major not in the list."""
    old, new = slurm_major(source), slurm_major(target)
    if old not in SLURM_MAJORS or new not in SLURM_MAJORS:
        return None
    return SLURM_MAJORS.index(new) - SLURM_MAJORS.index(old)


def window(target: str) -> int:
    """How many previous majors a `target` daemon accepts."""
    major = slurm_major(target)
    if major in SLURM_MAJORS and SLURM_MAJORS.index(major) >= SLURM_MAJORS.index(THREE_BACK_FROM):
        return 3
    return 2


def direct_hop_allowed(source: StackTriple, target: StackTriple) -> bool:
    """One in-place upgrade: never backwards (Slurm or CycleCloud), Slurm within the target's compatibility window."""
    distance = skew(source.slurm, target.slurm)
    if distance is None or distance < 0 or distance > window(target.slurm):
        return False
    return _version(target.cyclecloud) >= _version(source.cyclecloud)


def upgrade_path(source: StackTriple, target: StackTriple) -> list[StackTriple] | None:
    """The shortest road from `source` to `target` through rows of the table, each hop allowed on its own; the
    hops after `source`, ending with `target`; [] when they are the same; None when there is no road."""
    if source == target:
        return []
    previous: dict[StackTriple, StackTriple] = {}
    queue = deque([source])
    while queue:
        here = queue.popleft()
        for step in STACK:
            if step in previous or step == source or not direct_hop_allowed(here, step):
                continue
            if step != target and not step.renderable:
                continue
            previous[step] = here
            if step == target:
                return _unwind(previous, source, target)
            queue.append(step)
    return None


def _unwind(previous: dict[StackTriple, StackTriple], source: StackTriple, target: StackTriple) -> list[StackTriple]:
    road = [target]
    while previous[road[-1]] != source:
        road.append(previous[road[-1]])
    return list(reversed(road))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.replace("-", ".").split("."))


def release_order(text: str) -> tuple[int, ...]:
    """A CycleCloud release (8.9.1) as a tuple that sorts as the releases do."""
    return _version(text)
