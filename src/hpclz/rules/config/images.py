"""Node image rules: which image a node role boots, and whether it is pinned (docs/patching.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from hpclz.config.compute import Compute
from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

NodeImage = tuple[tuple[str | int, ...], str, str]  # (config path of the image, who boots it, image)
# A gallery image definition's ID without /versions/<n> "deploys its latest version" (compute.py's pattern).
_GALLERY_DEFINITION = re.compile(r"/galleries/[^/]+/images/[^/]+$", re.IGNORECASE)


def node_images(compute: Compute) -> Iterator[NodeImage]:
    """The image of every node role CycleCloud creates: the scheduler, the login nodes (when any) and each partition."""
    yield ("compute", "scheduler", "image"), "the scheduler", compute.scheduler.image
    if compute.login.count:
        yield ("compute", "login", "image"), "the login nodes", compute.login.image
    for index, partition in enumerate(compute.partitions):
        yield ("compute", "partitions", index, "image"), f"partition {partition.name}", partition.image


def pinned_marketplace_images(compute: Compute) -> Iterator[NodeImage]:
    """Node images that are marketplace URNs with a fixed version: the ones preflight can look up (HPCLZ-CMP-109)."""
    for path, who, image in node_images(compute):
        if not image.startswith("/") and not floats(image):
            yield path, who, image


def floats(image: str) -> bool:
    """True when the image names no fixed version: a marketplace URN ending in `latest`, or a gallery definition."""
    if image.startswith("/"):
        return bool(_GALLERY_DEFINITION.search(image))
    return image.rsplit(":", 1)[-1].lower() == "latest"


class NodeImageFloats(Rule[ConfigContext]):
    """`latest` is resolved when a VM is created: "Specify 'latest' to use the latest version of an image available
    at deploy time. Even if you use 'latest', the VM image will not automatically update after deploy time"
    (ImageReference.version, Azure/azure-resource-manager-schemas schemas/2024-07-01/Microsoft.Compute.json; a gallery
    image ID without a version means its latest version, same description). CycleCloud creates nodes when jobs need
    them, so with `latest` each node gets whatever the publisher released last: a new image reaches the cluster
    without review, and one partition can run nodes of different builds (driver, NCCL, OFED) under one tightly
    coupled job. A pinned version changes only when the config does, and `hpclz plan` shows the bump as "replace
    nodes" with the command that rolls them (docs/patching.md).

    An error in prod, where image changes are to be reviewed; a warning elsewhere, where the newest image is often
    what a test cluster wants and a pin is one more thing to keep current (marketplace versions are deleted some
    time after the publisher deprecates them: Azure/azure-powershell#28779). The CycleCloud server and the portal
    VM are ARM VMs hpclz creates once and patches in the guest (HPCLZ-MNT-001..005); their `latest` is resolved at
    that one deploy, so this rule is about CycleCloud's nodes only."""

    id = "HPCLZ-CMP-050"
    severity = Severity.ERROR
    title = "A node role's image floats (latest)"
    fix = (
        "Pin a version: publisher:offer:sku:<version> from `az vm image list --publisher microsoft-dsvm --offer "
        "ubuntu-hpc --sku 2204 --all -o table` (learn.microsoft.com/azure/virtual-machines/linux/cli-ps-findimage), "
        "or a gallery image's /versions/<n>; bump it to roll the nodes (docs/patching.md)."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        severity = None if ctx.is_prod else Severity.WARNING
        for path, who, image in node_images(ctx.config.compute):
            if floats(image):
                yield self.finding(
                    ctx, path, f"{who}: {image} gives each new node the newest version", severity=severity
                )


class SchedulerPython(NamedTuple):
    release: str  # the image's distribution release
    python: str | None  # where the scheduler's Python >= 3.11 comes from; None: nowhere


# The scheduler's hpclz venv needs Python >= 3.11 (the wheel's Requires-Python, pyproject.toml); hpclz-install-wheel
# (templates/cloud-init/install_wheel.sh.j2) takes the newest python3.N (N >= 11) with venv on the node, on Ubuntu
# 22.04 and 24.04 installs it from apt, and elsewhere waits for cyclecloud-slurm 4.0.9's scheduler install, which
# finds or installs the same (Azure/cyclecloud-slurm@50e6739 specs/scheduler/cluster-init/files/common.sh l.4-87).
# By marketplace image (publisher, offer, sku) in lower case: every image hpclz knows (racks.KNOWN_IMAGE_ARCHITECTURES,
# the Azure HPC images of Azure/azhpc-images@8e9d055f README.md l.18-25) and Ubuntu-HPC 20.04.
_JAMMY = SchedulerPython(
    "Ubuntu 22.04",
    "python3.11 and python3.11-venv from universe (3.11.0~rc1-1~22.04, packages.ubuntu.com/jammy-updates/python3.11), "
    "installed by hpclz-install-wheel; python3 is 3.10 (packages.ubuntu.com/jammy/python3)",
)
_NOBLE = SchedulerPython(
    "Ubuntu 24.04",
    "python3 is 3.12 (3.12.3, packages.ubuntu.com/noble/python3); python3.12-venv installed by hpclz-install-wheel",
)
_ALMA_HPC = SchedulerPython(
    "AlmaLinux HPC",
    "the image installs python3.12 beside the platform python3 (Azure/azhpc-images@8e9d055f "
    "distros/almalinux8.10/install_utils.sh l.37-40, distros/almalinux9.x/install_utils.sh l.23-29)",
)
SCHEDULER_PYTHON: dict[tuple[str, str, str], SchedulerPython] = {
    ("microsoft-dsvm", "ubuntu-hpc", "2204"): _JAMMY,
    ("microsoft-dsvm", "ubuntu-hpc", "2204-v100"): _JAMMY,
    ("microsoft-dsvm", "ubuntu-hpc", "2204-rocm"): _JAMMY,
    ("microsoft-dsvm", "ubuntu-hpc", "2404"): _NOBLE,
    ("microsoft-dsvm", "ubuntu-hpc", "2404-rocm"): _NOBLE,
    ("microsoft-dsvm", "ubuntu-hpc", "2404-gb"): _NOBLE,
    ("almalinux", "almalinux-hpc", "8_10-hpc-gen2"): _ALMA_HPC,
    ("almalinux", "almalinux-hpc", "8_10-hpc-v100-gen2"): _ALMA_HPC,
    ("almalinux", "almalinux-hpc", "9-hpc-gen2"): _ALMA_HPC,
    ("almalinux", "almalinux-x86_64", "8-gen2"): SchedulerPython(
        "AlmaLinux 8",
        "cyclecloud-slurm's scheduler install adds python3.12 with yum (common.sh l.46-49); hpclz-wheel-update.timer "
        "installs hpclz once it is there",
    ),
    # Listed until June 2025 (Azure/azhpc-images@376553dc^ README.md l.15): python3 is 3.8 (3.8.2-0ubuntu2,
    # packages.ubuntu.com/focal/python3), and neither hpclz-install-wheel nor cyclecloud-slurm 4.0.9 installs a newer
    # one there (common.sh has no 20.04 branch: "Unsupported operating system", l.82-84).
    ("microsoft-dsvm", "ubuntu-hpc", "2004"): SchedulerPython("Ubuntu 20.04", None),
}


def scheduler_python(image: str) -> SchedulerPython | None:
    """What gives the scheduler's hpclz its Python on a marketplace image; None for an image hpclz does not know."""
    if image.startswith("/"):
        return None
    publisher, offer, sku, _version = (part.lower() for part in image.split(":"))
    return SCHEDULER_PYTHON.get((publisher, offer, sku))


class SchedulerHasPython311(Rule[ConfigContext]):
    """hpclz runs on the scheduler from its wheel in a venv (`hpclz verify`'s dispatch, the health gate's installer,
    the Slurm topology programs), and the wheel requires Python >= 3.11: pip refuses it on an older one ("requires a
    different Python"). hpclz-install-wheel finds or installs one where the image's distribution packages it
    (SCHEDULER_PYTHON names where it comes from on each image); on an image with none the scheduler would come up
    without hpclz, its health gate and topology, and its wheel timer would stop with that one line. Judged for the
    marketplace images in the table; a gallery image or another publisher's is the operator's to equip
    (python3.11 or newer with its venv module)."""

    id = "HPCLZ-CMP-051"
    severity = Severity.ERROR
    title = "The scheduler's image has no Python 3.11 or newer for hpclz"
    fix = (
        "Boot the scheduler from microsoft-dsvm:ubuntu-hpc:2204 or 2404, or almalinux:almalinux-hpc:8_10-hpc-gen2 or "
        "9-hpc-gen2 (a pinned version of it)."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        image = ctx.config.compute.scheduler.image
        known = scheduler_python(image)
        if known is not None and known.python is None:
            yield self.finding(
                ctx,
                ("compute", "scheduler", "image"),
                f"the scheduler: {image} is {known.release}, which has no Python 3.11 or newer for hpclz's venv",
            )


IMAGE_RULES: tuple[type[Rule[ConfigContext]], ...] = (NodeImageFloats, SchedulerHasPython311)
