"""Node image rules: which image a node role boots, and whether it is pinned (docs/patching.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

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


IMAGE_RULES: tuple[type[Rule[ConfigContext]], ...] = (NodeImageFloats,)
