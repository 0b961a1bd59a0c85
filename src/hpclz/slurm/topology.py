"""Slurm `topology/block` for rack-scale GPUs (ND GB200 v6, ND GB300 v6), generated from what the nodes report.

A block is one NVLink domain (an NVL72 rack of 18 VMs). A node's domain is what its GPUs report in the Fabric
section of `nvidia-smi -q`, "ClusterUUID" and "CliqueId", the pair cyclecloud-slurm's `azslurm topology -n` groups
nodes by (Azure/cyclecloud-slurm@50e6739, release 4.0.9, azure-slurm/slurmcc/topology.py l.172: `nvidia-smi -q |
grep 'ClusterUUID'` and `grep 'CliqueId'`). cyclecloud-slurm writes the file once, by hand: "topology is not updated
on autoscale" (same release, README.md l.275). Here it is regenerated from the nodes' current reports whenever nodes
power up or down, and applied with one `scontrol reconfigure` only when it changed.

Rules the generated file keeps, each seen on a real slurmctld 24.11.5 (Debian trixie, tests/slurm/test_topology.py):
- a block with fewer nodes than the base block size is fatal: slurmctld logged "fatal: Block configuration (rackB)
  children count lower than bblock_node_cnt" and exited at `scontrol reconfigure`. So a part rack (a node still
  booting, one powered down) is left out, as azslurm comments out blocks "with less than <block_size> nodes";
- a node in no block is never allocated (a 20-node job on 18 blocked nodes: "Requested node configuration is not
  available"), so a node whose rack is unknown is held out of scheduling rather than guessed into a block;
- BlockSizes lists the base block size (topology.conf(5): "Each block must have at least the planning base block
  size count of nodes");
- topology/block covers the whole cluster, and a one-node job pinned to a node in no block was refused at submission,
  "Requested topology configuration is not available" (tests/slurm/test_topology_wiring.py).
  So every other partition's nodes form one block of their own (a partition is never split), and a partition too
  small for a block keeps the plugin off, as no block can hold it.

Enabling the plugin: cyclecloud-slurm's slurm.conf includes site_specific.conf (Azure/cyclecloud-slurm@50e6739,
azure-slurm-install/templates/slurm.conf.template l.77; the file lives in /sched/<cluster>, linked from /etc/slurm,
install.py l.579-585, l.677-680), and its README says to put `TopologyPlugin=topology/block` and
`TopologyParam=BlockAsNodeRank` there only once topology.conf holds the racks, because "TopologyPlugin=topology/block
requires a populated topology.conf to exist before slurmctld starts" (README.md l.375-392). `--site-conf` does that:
the lines are added in the same pass that first writes a rack block, before its one `scontrol reconfigure`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hpclz.slurm.client import NodeInfo, SlurmClient, SlurmError

# nvidia-smi -q prints N/A for GPUs outside a multi-node NVLink fabric (captured output of an H100 in
# tests/fixtures/nvsmi/h100-fabric.txt), and an all-zero UUID where the fabric has no cluster.
NO_CLUSTER = "00000000-0000-0000-0000-000000000000"
# The Fabric "State" values nvidia-smi prints once the GPU's fabric registration ended (NVML nvmlGpuFabricState_t:
# NOT_SUPPORTED, NOT_STARTED, IN_PROGRESS, COMPLETED); "Status" Success means it ended well.
FABRIC_DONE = "Completed"
FABRIC_OK = "Success"
_FIELD = re.compile(r"^\s*(State|Status|CliqueId|ClusterUUID)\s*:\s*(.*?)\s*$")
_NATURAL = re.compile(r"(\d+)")


@dataclass(frozen=True)
class GpuFabric:
    """One GPU's Fabric section."""

    state: str
    status: str
    clique_id: str
    cluster_uuid: str

    @property
    def registered(self) -> bool:
        return self.state == FABRIC_DONE and self.status == FABRIC_OK

    @property
    def domain(self) -> str | None:
        """ClusterUUID_CliqueId, azslurm's rack key; None outside a multi-node NVLink domain."""
        if not self.registered or "N/A" in (self.clique_id, self.cluster_uuid) or self.cluster_uuid == NO_CLUSTER:
            return None
        return f"{self.cluster_uuid}_{self.clique_id}"


def parse_fabric(nvsmi_q: str) -> list[GpuFabric]:
    """The Fabric section of every GPU in `nvidia-smi -q` text, in GPU order."""
    gpus: list[GpuFabric] = []
    fields: dict[str, str] | None = None
    for line in nvsmi_q.splitlines():
        if line.strip() == "Fabric":
            fields = {}
            continue
        if fields is None:
            continue
        match = _FIELD.match(line)
        if match and match.group(1) not in fields:
            fields[match.group(1)] = match.group(2)
        if len(fields) == 4 or (not match and not line.startswith(" " * 8)):
            gpus.append(_gpu(fields))
            fields = None
    if fields is not None:
        gpus.append(_gpu(fields))
    return gpus


def _gpu(fields: Mapping[str, str]) -> GpuFabric:
    return GpuFabric(
        state=fields.get("State", "N/A"),
        status=fields.get("Status", "N/A"),
        clique_id=fields.get("CliqueId", "N/A"),
        cluster_uuid=fields.get("ClusterUUID", "N/A"),
    )


def node_domain(nvsmi_q: str) -> tuple[str | None, str]:
    """(the node's NVLink domain, why none): every GPU registered and all in one domain, else None and the reason."""
    gpus = parse_fabric(nvsmi_q)
    if not gpus:
        return None, "no GPU Fabric section in nvidia-smi -q"
    pending = [str(i) for i, g in enumerate(gpus) if not g.registered]
    if pending:
        return None, f"GPU {','.join(pending)} fabric not registered ({gpus[int(pending[0])].state})"
    domains = {g.domain for g in gpus}
    if None in domains:
        return None, "GPUs report no multi-node NVLink domain"
    if len(domains) > 1:
        return None, f"GPUs report {len(domains)} different NVLink domains"
    return domains.pop(), ""


@dataclass(frozen=True)
class Block:
    name: str
    domain: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class BlockTopology:
    """The blocks to schedule on and the nodes held out of every block, each with why. `blocks` are racks;
    `partition_blocks` are the other partitions, one block each (see module doc)."""

    blocks: tuple[Block, ...]
    held_out: tuple[tuple[str, str], ...]
    block_size: int
    partition_blocks: tuple[Block, ...] = ()

    def conf(self) -> str:
        """topology.conf text for topology/block (topology.conf(5), BlockName/Nodes/BlockSizes)."""
        lines = ["# hpclz: generated from the nodes' nvidia-smi -q Fabric ClusterUUID and CliqueId; do not edit."]
        for block in self.blocks:
            lines.append(f"# {block.domain}: {len(block.nodes)} nodes")
            lines.append(f"BlockName={block.name} Nodes={','.join(block.nodes)}")
        for block in self.partition_blocks:
            lines.append(f"# {block.domain}: no NVLink domain; one block so that its nodes stay schedulable")
            lines.append(f"BlockName={block.name} Nodes={','.join(block.nodes)}")
        for node, why in self.held_out:
            lines.append(f"# held out: {node}: {why}")
        lines.append(f"BlockSizes={self.block_size}")
        return "\n".join(lines) + "\n"


def natural_key(name: str) -> list[int | str]:
    return [int(part) if part.isdigit() else part.lower() for part in _NATURAL.split(name)]


def block_topology(domains: Mapping[str, str | None], block_size: int, why: Mapping[str, str] = {}) -> BlockTopology:
    """Group nodes by NVLink domain; a domain with fewer than `block_size` nodes is held out whole (see module doc)."""
    grouped: dict[str, list[str]] = {}
    held: list[tuple[str, str]] = []
    for node, domain in domains.items():
        if domain is None:
            held.append((node, why.get(node) or "NVLink domain unknown"))
        else:
            grouped.setdefault(domain, []).append(node)
    blocks: list[Block] = []
    for domain, nodes in sorted(grouped.items(), key=lambda item: (-len(item[1]), item[0])):
        ordered = tuple(sorted(nodes, key=natural_key))
        if len(ordered) < block_size:
            held += [(n, f"part rack: {len(ordered)} of {block_size} nodes of {domain} report") for n in ordered]
            continue
        blocks.append(Block(name=_block_name(domain), domain=domain, nodes=ordered))
    return BlockTopology(
        blocks=tuple(sorted(blocks, key=lambda b: natural_key(b.nodes[0]))),
        held_out=tuple(sorted(held, key=lambda h: natural_key(h[0]))),
        block_size=block_size,
    )


def partition_blocks(nodes: Iterable[NodeInfo], block_size: int) -> tuple[Block, ...]:
    """One block per partition for nodes outside the rack-scale partitions (a node in two partitions joins the block
    of its first). A partition with fewer nodes than a block holds cannot have one: the plugin cannot be used."""
    grouped: dict[str, list[str]] = {}
    for node in nodes:
        grouped.setdefault(node.partitions[0] if node.partitions else "none", []).append(node.name)
    small = {p: len(n) for p, n in grouped.items() if len(n) < block_size}
    if small:
        named = ", ".join(f"{p} ({n} nodes)" for p, n in sorted(small.items()))
        raise SlurmError(
            f"partition {named} has fewer nodes than a block of {block_size}; topology/block would leave them "
            "unschedulable (a node in no block gets no job), so the plugin stays off",
            hint="give each partition at least as many nodes as an NVLink domain, or keep rack-scale sizes in a "
            "cluster of their own",
        )
    return tuple(
        Block(name=f"partition_{name}", domain=f"partition {name}", nodes=tuple(sorted(nodes, key=natural_key)))
        for name, nodes in sorted(grouped.items())
    )


def _block_name(domain: str) -> str:
    cluster, _, clique = domain.partition("_")
    return f"nvl_{cluster.split('-')[0]}_{clique}"


POWERED_OFF = set("~%")  # sinfo flags: powered off, powering down (NodeInfo.flags)


def current_domains(nodes: Iterable[NodeInfo], reports: Path) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each node's domain from its report `<reports>/<node>.txt` (its `nvidia-smi -q`, written at boot). A node that
    is powered off or powering down is held out whatever its old report says: its VM is deallocated and comes
    back wherever Azure places it."""
    domains: dict[str, str | None] = {}
    why: dict[str, str] = {}
    for node in nodes:
        report = reports / f"{node.name}.txt"
        if set(node.flags) & POWERED_OFF or "powered" in node.base or "powering_down" in node.base:
            domains[node.name], why[node.name] = None, f"powered off ({node.state})"
        elif not report.is_file():
            domains[node.name], why[node.name] = None, "no fabric report yet"
        else:
            domains[node.name], why[node.name] = node_domain(report.read_text(encoding="utf-8"))
    return domains, why


def converge(
    client: SlurmClient, conf_path: Path, topology: BlockTopology, site: tuple[Path, tuple[str, ...]] | None = None
) -> bool:
    """Write topology.conf and run `scontrol reconfigure` when it changed; True when it did. Refuses a topology
    with no rack block: its rack-scale nodes could not be allocated at all. With `site` (site_specific.conf and the
    plugin's lines) those lines are added there too when missing (see module doc), in the same pass."""
    if not topology.blocks:
        raise SlurmError(
            f"no full NVLink domain of {topology.block_size} nodes reports yet; {conf_path} left as it is",
            hint="power up whole racks (cyclecloud-slurm's scale_m1 --racks N) and run again",
        )
    text = topology.conf()
    # Only what Slurm reads counts: a held-out node's reason changing (powered off, then part rack) is no reason to
    # restart slurmctld (24.11's reconfigure restarts it in place).
    same = conf_path.is_file() and _settings(conf_path.read_text(encoding="utf-8")) == _settings(text)
    enabled = site is None or _enable_plugin(*site, dry_run=True) is False
    if same and enabled:
        return False
    if not same:
        _write(conf_path, text)
    if site is not None:
        _enable_plugin(*site, dry_run=False)
    client.run("scontrol", "reconfigure")
    return True


PLUGIN_COMMENT = "# hpclz: Slurm block topology for the NVLink domains (hpclz.slurm.topology keeps topology.conf true)"


def plugin_lines(partitions: Iterable[str]) -> tuple[str, ...]:
    """What cyclecloud-slurm's README asks slurm.conf to hold for GB200/GB300: the block plugin, node ranks that
    follow the blocks, and the rack-scale partitions kept out of auto-suspend, whose racks are powered up and down
    whole instead (Azure/cyclecloud-slurm@50e6739 README.md l.375-379, "Required slurm.conf settings")."""
    return (
        "TopologyPlugin=topology/block",
        "TopologyParam=BlockAsNodeRank",
        f"SuspendExcParts={','.join(sorted(partitions))}",
    )


def add_site_lines(site_conf: Path, wanted: tuple[str, ...]) -> bool:
    """Add what is missing of `wanted` to site_specific.conf; True when anything was (another value of one of those
    keys is refused, see `_enable_plugin`)."""
    return _enable_plugin(site_conf, wanted, dry_run=False)


def _enable_plugin(site_conf: Path, wanted: tuple[str, ...], *, dry_run: bool) -> bool:
    """Add the plugin's lines to site_specific.conf; True when they were (or, dry, would be) added. One of those keys
    already set there to another value is someone else's choice: refused, not overwritten."""
    text = site_conf.read_text(encoding="utf-8") if site_conf.is_file() else ""
    settings = _settings(text)
    keys = {line.split("=", 1)[0].lower(): line for line in wanted}
    other = [s for s in settings if s.split("=", 1)[0].lower() in keys and s not in wanted]
    if other:
        want = keys[other[0].split("=", 1)[0].lower()]
        raise SlurmError(
            f"{site_conf} sets {other[0]}; block topology for the NVLink domains needs {want}",
            hint=f"remove that line from {site_conf} to let hpclz manage the topology",
        )
    missing = [line for line in wanted if line not in settings]
    if missing and not dry_run:
        body = text if not text or text.endswith("\n") else text + "\n"
        _write(site_conf, body + "\n".join([PLUGIN_COMMENT, *missing]) + "\n")
    return bool(missing)


def _write(path: Path, text: str) -> None:
    staged = path.with_name(path.name + ".hpclz-new")
    staged.write_text(text, encoding="utf-8")
    staged.replace(path)


def _settings(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def regenerate(
    client: SlurmClient,
    partition: str | Sequence[str],
    reports: Path,
    conf_path: Path,
    block_size: int,
    site_conf: Path | None = None,
) -> bool:
    """One pass on the scheduler: read the rack-scale partitions' nodes and their fabric reports, give every other
    partition its block, converge topology.conf (and, with `site_conf`, the plugin's lines)."""
    racked = {partition} if isinstance(partition, str) else set(partition)
    nodes = client.nodes()
    rack_nodes = [n for n in nodes if racked & set(n.partitions)]
    domains, why = current_domains(rack_nodes, reports)
    topology = block_topology(domains, block_size, why)
    others = partition_blocks([n for n in nodes if not racked & set(n.partitions)], block_size)
    site = (site_conf, plugin_lines(racked)) if site_conf is not None else None
    return converge(client, conf_path, replace(topology, partition_blocks=others), site)


def main(argv: list[str] | None = None) -> int:
    """`python3 -m hpclz.slurm.topology`: run on the scheduler after a node powers up or down (or on a timer)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m hpclz.slurm.topology", description=main.__doc__)
    parser.add_argument(
        "--partition", required=True, action="append", help="a rack-scale partition (repeat for several)"
    )
    parser.add_argument("--reports", type=Path, required=True, help="folder of <node>.txt, each its nvidia-smi -q")
    parser.add_argument("--conf", type=Path, required=True, help="topology.conf that slurm.conf reads")
    parser.add_argument("--block-size", type=int, default=18, help="VMs per NVLink domain (18: ND GB200/GB300 v6)")
    parser.add_argument("--site-conf", type=Path, default=None, help="site_specific.conf: the plugin's lines go here")
    parser.add_argument("--slurm-conf", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        client = SlurmClient.from_env(conf=args.slurm_conf)
        changed = regenerate(client, args.partition, args.reports, args.conf, args.block_size, args.site_conf)
    except SlurmError as exc:
        print(f"error: {exc}")
        return int(exc.exit_code)
    print(f"{args.conf}: {'rewritten, scontrol reconfigure run' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
