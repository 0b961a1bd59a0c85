"""Slurm 25.05+ `topology.yaml`: the NVLink racks as a block topology, the InfiniBand switches as a tree, every other
partition flat, each partition naming its own topology.

topology.yaml(5) (Slurm 26.05, https://slurm.schedmd.com/topology.yaml.html; the man page Debian sid's slurmctld
26.05.5 ships): the file "defines multiple network topologies", each `topology: <name>` with exactly one of `block`
(`block_sizes`, `blocks` of `block`/`nodes`), `tree` (`switches` of `switch` with `nodes` or `children`) or
`flat: true`; "The first topology defined with cluster_default: true will be used for partitions without an
explicitly specified topology"; "Slurm will first check for topology.yaml. If this file exists, topology.conf will be
ignored". slurm.conf(5) of the same release: a partition's `Topology=` is the "Name of the topology, defined in
topology.yaml, used by jobs in this partition". So the GB-class partitions (`Topology=nvlink`) are scheduled by the
racks, the InfiniBand partitions (`Topology=infiniband`) by the switches, and no other partition is ever split into
blocks: one flat topology is the cluster default. That answers the doubt about a cluster-wide block plugin with racks
powered off: per-partition topologies keep the other partitions out of blocks (topology.conf's one plugin could not).

The racks come from the nodes' `nvidia-smi -q` as for topology.conf (hpclz.slurm.topology). The tree's leaves are the
InfiniBand switches that cyclecloud-slurm's `azslurm topology -f` finds (Azure/cyclecloud-slurm@049346f,
azure-slurm/slurmcc/topology.py): each node's port GUIDs from `ibstat` ("Port GUID", l.338), written without the
`0x00` that ibstat prints and SHARP omits (l.353-357), and the SHARP tool's grouping of GUIDs by switch, one line per
leaf switch, `SwitchName=ibsw2 Nodes=0x155dfffd341acb,0x155dfffd341b0b` (`sharp_cmd topology`, l.395, l.437); a node
joins the first switch that lists one of its GUIDs (l.441-460) and one switch above joins the leaves (l.552).

Seen on a real slurmctld 26.05.5 (Debian sid), with blocks of three nodes and three nodes in none: unlike 24.11, a
one-node job pinned to a node in no block ran there, a two-node job ran inside the block, and a four-node job was
refused ("Requested node configuration is not available"). So on 26.05 a held-out node may still take a one-node job
(one VM: no NVLink domain to split), and multi-node jobs stay in blocks. The tree holds every node of its partitions,
powered off or never reported included (TreeTopology): Slurm powers a node up only for a job it may allocate it to.

Slurm reads the file only beside the slurm.conf path it is given (/etc/slurm/slurm.conf, a link into /sched), so each
pass links /etc/slurm/topology.yaml to the file it writes (link_yaml).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hpclz.slurm.client import NodeInfo, SlurmClient, SlurmError
from hpclz.slurm.sharp import read_switches, sharp_guid
from hpclz.slurm.sharp import sharp_switches as sharp_switches
from hpclz.slurm.topology import (
    POWERED_OFF,
    BlockTopology,
    add_site_lines,
    block_topology,
    current_domains,
    natural_key,
    plugin_lines,
)

BLOCK_TOPOLOGY = "nvlink"
TREE_TOPOLOGY = "infiniband"
FLAT_TOPOLOGY = "flat"
ROOT_SWITCH = "ib_root"
UNPLACED_SWITCH = "ib_unplaced"
TOPOLOGY_YAML = "topology.yaml"
IBSTAT_SUFFIX = ".ibstat"
_PORT_GUID = re.compile(r"^\s*Port GUID:\s*(0x[0-9a-fA-F]+)\s*$", re.M)


def port_guids(ibstat: str) -> list[str]:
    """The port GUIDs in `ibstat` text, as SHARP writes them: lower case, without ibstat's leading `0x00`."""
    return [sharp_guid(g) for g in _PORT_GUID.findall(ibstat)]


@dataclass(frozen=True)
class Switch:
    name: str
    nodes: tuple[str, ...] = ()
    children: tuple[str, ...] = ()


@dataclass(frozen=True)
class TreeTopology:
    """The leaf switches with the nodes under them, and the nodes no switch is known for (`unplaced`), each with why.

    Every node of a tree partition is in the tree: the unplaced ones under one more leaf switch, joined at the top like
    the others. Slurm powers up only nodes it may allocate, and a node outside the tree is not allocated to a
    multi-node job (seen with slurmctld 26.05.5: tests/slurm/test_topology_yaml.py), so a powered-off node held out
    would never be powered up for one. A tree does not forbid spanning switches: topology.conf(5) (Slurm 26.05, the
    tree plugin topology.yaml(5) refers to): "All nodes in the network must be connected to at least one switch" and
    "Jobs can only span nodes connected by the same switch fabric", which the switch above the leaves makes one. The
    unplaced switch is a guess that costs placement only: the next pass after the node reports moves it."""

    leaves: tuple[Switch, ...]
    unplaced: tuple[tuple[str, str], ...]

    @property
    def switches(self) -> tuple[Switch, ...]:
        """The leaves, the unplaced nodes' leaf, and one switch above them where there are several (as azslurm's tree
        output does)."""
        extra = (Switch(UNPLACED_SWITCH, nodes=tuple(node for node, _ in self.unplaced)),) if self.unplaced else ()
        leaves = (*self.leaves, *extra)
        if len(leaves) < 2:
            return leaves
        return (Switch(ROOT_SWITCH, children=tuple(leaf.name for leaf in leaves)), *leaves)


def tree_topology(
    guids: Mapping[str, Sequence[str] | None],
    switches: Sequence[tuple[str, Sequence[str]]],
    why: Mapping[str, str] = {},
) -> TreeTopology:
    """Place each node under the first leaf switch that lists one of its GUIDs; one with none listed or None (no
    report) is unplaced."""
    leaf_of: dict[str, str] = {}
    for switch, members in switches:
        for guid in members:
            leaf_of.setdefault(guid, switch)
    grouped: dict[str, list[str]] = {}
    held: list[tuple[str, str]] = []
    order = {name: i for i, (name, _) in enumerate(switches)}
    for node, node_guids in guids.items():
        leaves = sorted({leaf_of[g] for g in node_guids or () if g in leaf_of}, key=order.__getitem__)
        if node_guids is None or not leaves:
            held.append((node, why.get(node) or "no InfiniBand switch lists its port GUIDs"))
        else:
            grouped.setdefault(leaves[0], []).append(node)
    leaves_out = tuple(
        Switch(_switch_name(name), nodes=tuple(sorted(nodes, key=natural_key)))
        for name, nodes in sorted(grouped.items(), key=lambda item: order[item[0]])
    )
    return TreeTopology(leaves=leaves_out, unplaced=tuple(sorted(held, key=lambda h: natural_key(h[0]))))


def _switch_name(name: str) -> str:
    # topology.yaml(5): a switch name "cannot be longer than 64 characters".
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64]


def current_guids(nodes: Iterable[NodeInfo], reports: Path) -> tuple[dict[str, list[str] | None], dict[str, str]]:
    """Each node's port GUIDs from its report `<reports>/<node>.ibstat`, powered off or not: a powered-off node stays
    under the switch of its last report (the reports stay on /sched) so that Slurm may still allocate it, and so
    power it up, for a multi-node job; its VM may come back under another switch, and its next report moves it there
    (TreeTopology). None for a node that has not reported."""
    guids: dict[str, list[str] | None] = {}
    why: dict[str, str] = {}
    for node in nodes:
        report = reports / f"{node.name}{IBSTAT_SUFFIX}"
        if not report.is_file():
            off = set(node.flags) & POWERED_OFF or "powered" in node.base or "powering_down" in node.base
            guids[node.name] = None
            why[node.name] = f"powered off ({node.state}) before it reported" if off else "no InfiniBand report yet"
        else:
            found = port_guids(report.read_text(encoding="utf-8"))
            guids[node.name] = found or None
            if not found:
                why[node.name] = "no Port GUID in its ibstat report"
    return guids, why


def topology_yaml(blocks: BlockTopology | None, tree: TreeTopology | None) -> str:
    """topology.yaml text: the flat cluster default, then the racks' block topology and the switches' tree where
    there are any. A topology with no unit is refused: its partition's nodes could not be allocated at all."""
    from ruamel.yaml import YAML

    if blocks is not None and not blocks.blocks:
        raise SlurmError(
            f"no full NVLink domain of {blocks.block_size} nodes reports yet; {TOPOLOGY_YAML} left as it is",
            hint="power up whole racks (cyclecloud-slurm's scale_m1 --racks N) and run again",
        )
    if tree is not None and not tree.leaves:
        raise SlurmError(
            f"no InfiniBand partition node is under a known switch yet; {TOPOLOGY_YAML} left as it is",
            hint="check that the nodes' ibstat reports and the SHARP topology file are written",
        )
    doc: list[dict[str, object]] = [{"topology": FLAT_TOPOLOGY, "cluster_default": True, "flat": True}]
    comments = ["# hpclz: generated from what the nodes report (hpclz.slurm.topology_yaml); do not edit."]
    if blocks is not None:
        doc.append(
            {
                "topology": BLOCK_TOPOLOGY,
                "cluster_default": False,
                "block": {
                    "block_sizes": [blocks.block_size],
                    "blocks": [{"block": b.name, "nodes": ",".join(b.nodes)} for b in blocks.blocks],
                },
            }
        )
        comments += [f"# {BLOCK_TOPOLOGY}: {b.name} is NVLink domain {b.domain}" for b in blocks.blocks]
        comments += [f"# {BLOCK_TOPOLOGY}: held out: {node}: {why}" for node, why in blocks.held_out]
    if tree is not None:
        switches: list[dict[str, str]] = []
        for s in tree.switches:
            entry = {"switch": s.name}
            entry |= {"children": ",".join(s.children)} if s.children else {"nodes": ",".join(s.nodes)}
            switches.append(entry)
        doc.append({"topology": TREE_TOPOLOGY, "cluster_default": False, "tree": {"switches": switches}})
        comments += [f"# {TREE_TOPOLOGY}: under {UNPLACED_SWITCH}: {node}: {why}" for node, why in tree.unplaced]
    out = io.StringIO()
    # Round-trip mode keeps each mapping's order: topology.yaml(5) wants `topology` "the first attribute".
    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.dump(doc, out)
    return "\n".join(comments) + "\n---\n" + out.getvalue()


def settings(text: str) -> str:
    """What Slurm reads of the file: the comments (why each node is held out) may change without a reconfigure."""
    return "\n".join(line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def link_yaml(link: Path, target: Path) -> bool:
    """Make `link` (topology.yaml beside the slurm.conf path the daemons are given) a symbolic link to `target`, the
    file this module writes; True when it changed. Relative, so it resolves the same from any root (a chroot).

    Slurm finds topology.yaml in the directory of the slurm.conf PATH, as a string: `get_extra_conf_path()` takes
    SLURM_CONF (default /etc/slurm/slurm.conf), cuts it after the last '/' and appends the name; it never follows
    /etc/slurm/slurm.conf's link into /sched (SchedMD/slurm@56fe867 (slurm-26-05-3-1) src/common/read_config.c
    l.6411-6446), and `topology_g_init()` reads "topology.yaml" through it, falling back to topology.conf and
    TopologyPlugin when it is absent (src/interfaces/topology.c l.284-300). topology.yaml(5): "The file must be
    located in the same directory as slurm.conf". cyclecloud-slurm links slurm.conf and topology.conf from
    /sched/<cluster> into /etc/slurm (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.656-659,
    l.698-701) and nothing links topology.yaml: without this link slurmctld reads none (seen with 26.05.5,
    tests/slurm/test_topology_wiring.py)."""
    import os

    wanted = os.path.relpath(target, link.parent)
    if link.is_symlink() and str(link.readlink()) == wanted:
        return False
    staged = link.with_name(link.name + ".hpclz-new")
    try:
        staged.unlink(missing_ok=True)
        staged.symlink_to(wanted)
    except FileNotFoundError:
        raise SlurmError(
            f"{link.parent} does not exist: Slurm is not installed here yet; {TOPOLOGY_YAML} not linked",
            hint="run again once cyclecloud-slurm has installed Slurm",
        ) from None
    staged.replace(link)
    return True


def converge_yaml(client: SlurmClient, path: Path, text: str, *, reconfigure: bool = False) -> bool:
    """Write topology.yaml and run one `scontrol reconfigure` when what Slurm reads of it changed (or `reconfigure`:
    slurm.conf's own lines changed); True when it did."""
    if path.is_file() and settings(path.read_text(encoding="utf-8")) == settings(text):
        if reconfigure:
            client.run("scontrol", "reconfigure")
        return reconfigure
    staged = path.with_name(path.name + ".hpclz-new")
    staged.write_text(text, encoding="utf-8")
    staged.replace(path)
    client.run("scontrol", "reconfigure")
    return True


def partition_topologies(client: SlurmClient, wanted: Mapping[str, str], wait_s: float = 60.0) -> list[str]:
    """Give each partition its topology with `scontrol update PartitionName=<p> Topology=<t>` where it has another;
    the partitions changed. cyclecloud-slurm writes the partition lines (`azslurm partitions` > azure.conf,
    Azure/cyclecloud-slurm@049346f azure-slurm-install/templates/slurm.conf.template l.66-67), and a second line for
    the same partition in site_specific.conf stops slurmctld ("fatal: _build_single_partitionline_info: duplicate
    entry for partition gb300", slurmctld 26.05.5, seen here). An update holds until the next `scontrol reconfigure`
    or restart, which returns the partition to slurm.conf's (seen with 26.05.5: tests/slurm/test_topology_yaml.py),
    so every pass checks and sets it again. After a reconfigure slurmctld restarts in place: wait for it."""
    import time

    deadline = time.monotonic() + wait_s
    changed: list[str] = []
    for partition, topology in sorted(wanted.items()):
        while True:
            try:
                shown = client.run("scontrol", "show", "partition", partition)
                break
            except SlurmError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)
        found = re.search(r"\bTopology=(\S*)", shown)
        if (found.group(1) if found else "") != topology:
            client.run("scontrol", "update", f"PartitionName={partition}", f"Topology={topology}")
            changed.append(partition)
    return changed


def named_topologies(path: Path) -> set[str]:
    """The topologies topology.yaml at `path` names (`topology: <name>`, topology.yaml(5)); none when there is no file
    yet (before the first pass writes one)."""
    from ruamel.yaml import YAML

    if not path.is_file():
        return set()
    doc = YAML(typ="safe").load(path.read_text(encoding="utf-8")) or []
    return {str(entry["topology"]) for entry in doc if isinstance(entry, dict) and "topology" in entry}


def reapply_topologies(
    client: SlurmClient,
    *,
    rack_partitions: Sequence[str],
    tree_partitions: Sequence[str],
    path: Path,
    wait_s: float = 60.0,
) -> list[str]:
    """The light check: give each rack and InfiniBand partition the topology that topology.yaml at `path` names for it
    where `scontrol show partition` shows another (partition_topologies), waiting up to `wait_s` for slurmctld to
    answer; the partitions changed. No report is read, nothing is written and nothing reconfigured: a slurmctld restart
    or `scontrol reconfigure` drops each partition's `Topology=` but leaves topology.yaml as Slurm read it, so the
    topologies it names are the ones to set. A partition whose topology the file does not name stays as it is (the
    InfiniBand partitions stay flat while SHARP's grouping is unknown, as regenerate_yaml leaves them)."""
    named = named_topologies(path)
    wanted = {p: BLOCK_TOPOLOGY for p in rack_partitions if BLOCK_TOPOLOGY in named}
    wanted |= {p: TREE_TOPOLOGY for p in tree_partitions if TREE_TOPOLOGY in named}
    return partition_topologies(client, wanted, wait_s) if wanted else []


def _topologies(
    client: SlurmClient,
    rack_partitions: Sequence[str],
    tree_partitions: Sequence[str],
    reports: Path,
    block_size: int,
    switches: Path | None,
    say: Callable[[str], object],
) -> tuple[BlockTopology | None, TreeTopology | None]:
    """The rack partitions' blocks and the InfiniBand partitions' tree, from what the nodes report; the tree is None
    (its partitions stay flat, `say` told why) when SHARP's switch grouping cannot be read."""
    nodes = client.nodes()
    blocks = tree = None
    if rack_partitions:
        racked = [n for n in nodes if set(rack_partitions) & set(n.partitions)]
        domains, why = current_domains(racked, reports)
        blocks = block_topology(domains, block_size, why)
    if tree_partitions:
        ib_nodes = [n for n in nodes if set(tree_partitions) & set(n.partitions)]
        guids, why = current_guids(ib_nodes, reports)
        grouping, reason = (
            read_switches(client, ib_nodes, guids, tree_partitions, switches)
            if switches is not None
            else (None, "no --switches file to keep SHARP's switch grouping in")
        )
        if grouping is not None:
            tree = tree_topology(guids, grouping, why)
            if not tree.leaves:
                tree, reason = None, "no InfiniBand partition node is under a switch SHARP lists"
        if tree is None:
            # Never a guessed tree: without SHARP's grouping these partitions are placed blind, never refused.
            say(f"{TREE_TOPOLOGY}: {', '.join(tree_partitions)} stay {FLAT_TOPOLOGY}: {reason}")
    return blocks, tree


def regenerate_yaml(
    client: SlurmClient,
    *,
    rack_partitions: Sequence[str],
    tree_partitions: Sequence[str],
    reports: Path,
    path: Path,
    block_size: int,
    switches: Path | None = None,
    site_conf: Path | None = None,
    link: Path | None = None,
    say: Callable[[str], object] = print,
) -> bool:
    """One pass on the scheduler: the rack partitions' blocks from their fabric reports, the InfiniBand partitions'
    tree from their ibstat reports and the SHARP topology file, converged into topology.yaml, and each of those
    partitions set to its topology, `link` (topology.yaml beside slurm.conf) pointing at `path` before the first
    reconfigure. True when anything changed. When SHARP's switch grouping cannot be read, the
    InfiniBand partitions stay flat and `say` is told why."""
    # The lines cyclecloud-slurm's README asks for beside block topology, but the plugin: topology.yaml names it
    # (hpclz.slurm.topology.plugin_lines). Added on the first pass, before any rack reports: SuspendExcParts keeps the
    # rack partitions out of auto-suspend from the start, so Slurm never powers down part of a rack that scale_m1
    # powered up whole, and BlockAsNodeRank needs no block to be set. One reconfigure, at the end of the pass: SHARP's
    # grouping is read through srun on an idle node, which a restarting slurmctld does not show at once.
    site = [line for line in plugin_lines(rack_partitions) if not line.startswith("TopologyPlugin=")]
    added = site_conf is not None and bool(rack_partitions) and add_site_lines(site_conf, tuple(site))
    try:
        blocks, tree = _topologies(client, rack_partitions, tree_partitions, reports, block_size, switches, say)
        text = topology_yaml(blocks, tree)
    except SlurmError:
        if added:  # nothing else to write yet: the racks still leave auto-suspend now
            client.run("scontrol", "reconfigure")
        raise
    linked = link is not None and link_yaml(link, path)
    reconfigured = converge_yaml(client, path, text, reconfigure=linked or added)
    wanted = {p: BLOCK_TOPOLOGY for p in rack_partitions}
    wanted |= {p: TREE_TOPOLOGY for p in tree_partitions} if tree is not None else {}
    return bool(partition_topologies(client, wanted)) or reconfigured


def main(argv: list[str] | None = None) -> int:
    """`python3 -m hpclz.slurm.topology_yaml`: run on the scheduler (Slurm 25.05+) after nodes power up or down."""
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m hpclz.slurm.topology_yaml", description=main.__doc__)
    parser.add_argument("--rack-partition", action="append", default=[], help="a GB-class partition (repeatable)")
    parser.add_argument("--tree-partition", action="append", default=[], help="an InfiniBand partition (repeatable)")
    parser.add_argument("--reports", type=Path, default=None, help="folder of <node>.txt and <node>.ibstat")
    parser.add_argument("--yaml", type=Path, required=True, help="topology.yaml beside slurm.conf")
    parser.add_argument(
        "--switches",
        type=Path,
        default=None,
        help="where `sharp_cmd topology` output is kept (read again on new GUIDs)",
    )
    parser.add_argument("--block-size", type=int, default=18, help="VMs per NVLink domain (18: ND GB200/GB300 v6)")
    parser.add_argument("--site-conf", type=Path, default=None, help="site_specific.conf: SuspendExcParts goes here")
    parser.add_argument(
        "--link",
        type=Path,
        default=None,
        help="topology.yaml beside the slurm.conf path Slurm is given (/etc/slurm), linked to --yaml",
    )
    parser.add_argument(
        "--reapply",
        action="store_true",
        help="only give the partitions the topologies --yaml names where Slurm shows them without (after a slurmctld "
        "restart or reconfigure); no report is read, nothing written",
    )
    parser.add_argument(
        "--wait-s", type=float, default=60.0, help="seconds to wait for slurmctld to answer before giving up"
    )
    parser.add_argument("--slurm-conf", type=Path, default=None)
    args = parser.parse_args(argv)
    if not args.rack_partition and not args.tree_partition:
        parser.error("name at least one --rack-partition or --tree-partition")
    if args.reports is None and not args.reapply:
        parser.error("--reports is required unless --reapply")
    try:
        client = SlurmClient.from_env(conf=args.slurm_conf)
        if args.reapply:
            reset = reapply_topologies(
                client,
                rack_partitions=args.rack_partition,
                tree_partitions=args.tree_partition,
                path=args.yaml,
                wait_s=args.wait_s,
            )
            print(f"Topology= set again on {', '.join(reset)}" if reset else "partition topologies: unchanged")
            return 0
        changed = regenerate_yaml(
            client,
            rack_partitions=args.rack_partition,
            tree_partitions=args.tree_partition,
            reports=args.reports,
            path=args.yaml,
            block_size=args.block_size,
            switches=args.switches,
            site_conf=args.site_conf,
            link=args.link,
        )
    except SlurmError as exc:
        print(f"error: {exc}")
        return int(exc.exit_code)
    print(f"{args.yaml}: {'changed' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
