"""Rack-scale GPU sizes (ND GB200 v6, ND GB300 v6): Arm hosts and NVLink domains that span 18 VMs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from hpclz.findings import Finding, Severity
from hpclz.rules.base import Rule
from hpclz.rules.context import ConfigContext

Architecture = Literal["x64", "arm64"]

# Marketplace image SKUs whose instruction set is stated by their publisher, keyed (publisher, offer, sku) in lower
# case. Azure/azhpc-images README lists microsoft-dsvm:ubuntu-hpc:{2204,2404,2204-rocm,2404-rocm} and
# almalinux:almalinux-hpc:8_10-hpc-gen2 as its x64 HPC images; the arm64 Ubuntu-HPC 24.04 build for Grace hosts is
# the SKU 2404-gb (a GB300 scale-set validation script pins microsoft-dsvm:ubuntu-hpc:2404-gb:24.04.2025110401).
# An image not listed here (a gallery image, another publisher) is not judged: its architecture is not known offline.
KNOWN_IMAGE_ARCHITECTURES: dict[tuple[str, str, str], Architecture] = {
    ("microsoft-dsvm", "ubuntu-hpc", "2204"): "x64",
    ("microsoft-dsvm", "ubuntu-hpc", "2404"): "x64",
    ("microsoft-dsvm", "ubuntu-hpc", "2204-rocm"): "x64",
    ("microsoft-dsvm", "ubuntu-hpc", "2404-rocm"): "x64",
    ("almalinux", "almalinux-hpc", "8_10-hpc-gen2"): "x64",
    ("almalinux", "almalinux-x86_64", "8-gen2"): "x64",
    ("microsoft-dsvm", "ubuntu-hpc", "2404-gb"): "arm64",
}


def image_architecture(image: str) -> Architecture | None:
    """The instruction set a marketplace URN is built for, when its publisher states it; None when unknown."""
    if image.startswith("/"):
        return None
    publisher, offer, sku, _version = (part.lower() for part in image.split(":"))
    return KNOWN_IMAGE_ARCHITECTURES.get((publisher, offer, sku))


class ImageArchitectureMatchesSize(Rule[ConfigContext]):
    """An image runs only on the instruction set it was built for: ND GB200 v6 and ND GB300 v6 run on NVIDIA Grace
    CPUs (Arm, aarch64; learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-gb200-v6-series and
    nd-gb300-v6-series, "two NVIDIA Grace CPUs"), every other size hpclz knows is x64. A node booted from an image of
    the other architecture never starts, and CycleCloud reports only a failed node. cyclecloud-slurm adds a second
    limit on Arm: "Slurm is not supported on arm64 architecture for Ubuntu versions < 24.04"
    (Azure/cyclecloud-slurm@50e6739, release 4.0.9, azure-slurm-install/ubuntu.sh l.86-87), so a Grace partition
    needs an Ubuntu 24.04 arm64 image. Judged only for images whose architecture is known offline (the table above);
    a gallery image is the operator's to build right."""

    id = "HPCLZ-CMP-070"
    severity = Severity.ERROR
    title = "A partition's image is built for another CPU architecture than its VM size"
    fix = (
        "Grace (arm64) sizes boot microsoft-dsvm:ubuntu-hpc:2404-gb:<version>; x64 sizes boot an x64 image such as "
        "microsoft-dsvm:ubuntu-hpc:2204:<version>."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, partition, sku in ctx.partitions():
            built_for = image_architecture(partition.image)
            if sku is None or built_for is None or built_for == sku.architecture:
                continue
            yield self.finding(
                ctx,
                ("compute", "partitions", i, "image"),
                f"partition {partition.name}: {partition.vm_size} has {sku.architecture} CPUs but {partition.image} "
                f"is an {built_for} image",
            )


class PartitionInWholeRacks(Rule[ConfigContext]):
    """A GB200/GB300 NVLink domain is a rack of 18 VMs ("This 72-GPU rack-scale system is composed of groups of 18
    ND GB200 v6 VMs", learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-gb200-v6-series; "There are
    18 VMs per rack", nd-gb300-v6-series). Multi-node NVLink (MNNVL, IMEX) reaches only the VMs of one rack, and
    cyclecloud-slurm scales these sizes rack by rack: "`--racks N` is equivalent to `--target-count (N * 18)`", and
    `prune` keeps "only fully populated racks" (Azure/cyclecloud-slurm@50e6739, release 4.0.9, README.md § Scaling
    with scale_m1). A partition whose node count is not a whole number of racks pays for, and schedules onto, a
    part rack whose NVLink domain is incomplete; its jobs of up to 18 nodes cannot all stay inside one domain."""

    id = "HPCLZ-CMP-071"
    severity = Severity.ERROR
    title = "A rack-scale partition is not a whole number of NVLink domains (racks)"
    fix = "Set max_nodes to a multiple of the size's rack (18 VMs for ND GB200 v6 and ND GB300 v6)."

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, partition, sku in ctx.partitions():
            rack = sku.nvlink_domain_vms if sku is not None else None
            if rack is None or partition.max_nodes % rack == 0:
                continue
            racks, rest = divmod(partition.max_nodes, rack)
            yield self.finding(
                ctx,
                ("compute", "partitions", i, "max_nodes"),
                f"partition {partition.name}: {partition.max_nodes} nodes of {partition.vm_size} is {racks} full "
                f"rack(s) of {rack} and {rest} node(s) of a part rack; use {racks * rack or rack} or "
                f"{(racks + 1) * rack}",
            )


class OtherPartitionsFillABlock(Rule[ConfigContext]):
    """Jobs of up to one rack stay inside one NVLink domain only under Slurm's block topology, and that topology
    covers the whole cluster: a node in no block gets no job at all, even a one-node job ("Requested topology
    configuration is not available", slurmctld 24.11, tests/slurm/test_topology_wiring.py). So hpclz.slurm.topology
    gives each other partition one block of its own, and a block must hold at least the base block size, one rack
    (topology.conf(5): "Each block must have at least the planning base block size count of nodes"; slurmctld exits
    on a smaller one). A partition with fewer nodes than a rack cannot be a block: the scheduler's hpclz-topology then
    keeps the plugin off and says why, and the rack-scale partition's jobs are placed with no regard to racks.
    From Slurm 25.05 each partition names its own topology in topology.yaml (hpclz.slurm.topology_yaml): only the
    rack-scale partitions are in blocks, so the other partitions' sizes no longer matter and the rule is silent."""

    id = "HPCLZ-CMP-072"
    severity = Severity.WARNING
    title = "A partition beside a rack-scale partition is smaller than a block of Slurm's topology"
    fix = (
        "Give every other partition at least as many nodes (max_nodes) as a rack of the rack-scale size (18 VMs for "
        "ND GB200 v6 and ND GB300 v6), or put the rack-scale partition in a landing zone of its own."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        racks = {p.name: sku.nvlink_domain_vms for _, p, sku in ctx.partitions() if sku and sku.nvlink_domain_vms}
        if not racks or ctx.config.compute.cyclecloud.slurm_reads_topology_yaml:
            return
        block = min(racks.values())
        for i, partition, _sku in ctx.partitions():
            if partition.name in racks or partition.max_nodes >= block:
                continue
            yield self.finding(
                ctx,
                ("compute", "partitions", i, "max_nodes"),
                f"partition {partition.name}: {partition.max_nodes} nodes is fewer than a block of {block} (one rack "
                f"of {', '.join(sorted(racks))}); Slurm's block topology stays off and jobs are not kept inside racks",
            )


class RackIdleTimeNeverApplies(Rule[ConfigContext]):
    """A rack-scale partition is kept out of Slurm's auto-suspend, as cyclecloud-slurm asks for GB200/GB300
    ("the gbx00 partition must be excluded from auto-suspend", `SuspendExcParts`: Azure/cyclecloud-slurm@50e6739
    README.md l.375-379): the scheduler's hpclz-topology writes that line on its first pass (hpclz.slurm.topology,
    hpclz.slurm.topology_yaml). Its racks are powered up and down whole with cyclecloud-slurm's `scale_m1`; Slurm
    never powers one of its nodes down when idle, and a waiting job never powers up a rack that is off (a node in no
    block gets no multi-node job: docs/gb-racks.md). So the partition's idle_shutdown_minutes never applies, and idle
    racks bill until an operator powers them down."""

    id = "HPCLZ-CMP-073"
    severity = Severity.WARNING
    title = "A rack partition's idle time never applies: its racks stay up until powered down whole"
    fix = (
        "Remove idle_shutdown_minutes from the rack-scale partition; power its racks up and down whole with "
        "cyclecloud-slurm's scale_m1 (docs/gb-racks.md)."
    )

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        for i, partition, sku in ctx.partitions():
            if sku and sku.nvlink_domain_vms and partition.idle_shutdown_minutes:
                yield self.finding(
                    ctx,
                    ("compute", "partitions", i, "idle_shutdown_minutes"),
                    f"partition {partition.name}: racks of {sku.nvlink_domain_vms} {partition.vm_size} are kept out of "
                    "Slurm's auto-suspend and are never stopped when idle; power them down whole with scale_m1",
                )


RACK_RULES: tuple[type[Rule[ConfigContext]], ...] = (
    ImageArchitectureMatchesSize,
    PartitionInWholeRacks,
    OtherPartitionsFillABlock,
    RackIdleTimeNeverApplies,
)
