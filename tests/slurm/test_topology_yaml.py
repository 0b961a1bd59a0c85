"""Slurm 25.05+ topology.yaml: NVLink racks as blocks, InfiniBand switches as a tree, each partition naming its own
topology (hpclz.slurm.topology_yaml), parsed here and scheduled by a real slurmctld 26.05 (Debian sid chroot,
tests/support/trixie_slurm.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ruamel.yaml import YAML

from hpclz.slurm.client import NodeInfo, SlurmClient, SlurmError
from hpclz.slurm.topology import block_topology, node_domain
from hpclz.slurm.topology_yaml import (
    BLOCK_TOPOLOGY,
    FLAT_TOPOLOGY,
    ROOT_SWITCH,
    TREE_TOPOLOGY,
    UNPLACED_SWITCH,
    Switch,
    TreeTopology,
    converge_yaml,
    current_guids,
    link_yaml,
    main,
    port_guids,
    regenerate_yaml,
    sharp_switches,
    topology_yaml,
    tree_topology,
)
from tests.rules.cases import Case, _all, _set
from tests.rules.test_config_rules import _findings
from tests.slurm.test_topology import RACK_A, RACK_B, gb_report
from tests.support import trixie_slurm


def ibstat_report(guids: list[str]) -> str:
    """`ibstat` text with the fields cyclecloud-slurm reads ("Port GUID", Azure/cyclecloud-slurm@049346f
    azure-slurm/slurmcc/topology.py l.338), one CA per port; ibstat prints the GUID with a leading 0x00 (l.353)."""
    return "".join(
        f"CA 'mlx5_ib{i}'\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n\t\tPort GUID: 0x00{g[2:]}\n"
        for i, g in enumerate(guids)
    )


def sharp_file(leaves: dict[str, list[str]]) -> str:
    """`sharp_cmd topology` output as cyclecloud-slurm parses it: a leaf line per switch,
    'SwitchName=ibsw2 Nodes=0x155dfffd341acb,0x155dfffd341b0b' (same file, l.437)."""
    return "".join(f"SwitchName={name} Nodes={','.join(guids)}\n" for name, guids in leaves.items())


def test_port_guids_are_written_as_sharp_writes_them() -> None:
    assert port_guids(ibstat_report(["0x155dfffd33ff33", "0x155dfffd33ff34"])) == [
        "0x155dfffd33ff33",
        "0x155dfffd33ff34",
    ]
    assert sharp_switches("# header\nSwitchName=ibsw2 Nodes=0x155dfffd341acb,0x155dfffd341b0b\n") == [
        ("ibsw2", ["0x155dfffd341acb", "0x155dfffd341b0b"])
    ]


def test_a_node_joins_the_first_switch_listing_a_guid_and_an_unknown_one_goes_under_the_unplaced_switch() -> None:
    switches = [("ibsw1", ["0x1", "0x3"]), ("ibsw2", ["0x2", "0x4", "0x5"])]
    tree = tree_topology({"h1": ["0x1"], "h2": ["0x2"], "h3": ["0x5", "0x3"], "h4": ["0x9"], "h5": None}, switches)
    assert [(s.name, s.nodes) for s in tree.leaves] == [("ibsw1", ("h1", "h3")), ("ibsw2", ("h2",))]
    assert [n for n, _ in tree.unplaced] == ["h4", "h5"]
    assert [(s.name, s.nodes, s.children) for s in tree.switches] == [
        (ROOT_SWITCH, (), ("ibsw1", "ibsw2", UNPLACED_SWITCH)),
        ("ibsw1", ("h1", "h3"), ()),
        ("ibsw2", ("h2",), ()),
        (UNPLACED_SWITCH, ("h4", "h5"), ()),
    ]


@given(st.dictionaries(st.from_regex(r"h[0-9]{1,3}", fullmatch=True), st.sampled_from(["0x1", "0x2", "0x3", None])))
def test_every_node_is_under_exactly_one_leaf_switch_joined_at_the_top(guids: dict[str, str | None]) -> None:
    tree = tree_topology({n: [g] if g else None for n, g in guids.items()}, [("a", ["0x1"]), ("b", ["0x2"])])
    leaves = [s for s in tree.switches if not s.children]
    assert sorted(n for s in leaves for n in s.nodes) == sorted(guids)
    if len(leaves) > 1:  # one switch above them all: a job may span any of them (topology.conf(5))
        assert [s.children for s in tree.switches if s.children] == [tuple(s.name for s in leaves)]


def test_a_powered_off_node_keeps_the_switch_of_its_last_report(tmp_path: Path) -> None:
    (tmp_path / "h1.ibstat").write_text(ibstat_report(["0x1001"]), encoding="utf-8")
    nodes = [
        NodeInfo(name="h1", state="idle~", partitions=("h100",)),
        NodeInfo(name="h2", state="idle~", partitions=("h100",)),
        NodeInfo(name="h3", state="idle", partitions=("h100",)),
    ]
    guids, why = current_guids(nodes, tmp_path)
    assert guids == {"h1": ["0x1001"], "h2": None, "h3": None}
    assert why == {"h2": "powered off (idle~) before it reported", "h3": "no InfiniBand report yet"}
    tree = tree_topology(guids, [("ibsw1", ["0x1001"])], why)
    text = topology_yaml(None, tree)
    assert "# infiniband: under ib_unplaced: h2: powered off (idle~) before it reported" in text
    (tree_doc,) = [t for t in YAML(typ="safe").load(text.split("---\n", 1)[1]) if t["topology"] == TREE_TOPOLOGY]
    assert tree_doc["tree"]["switches"] == [
        {"switch": ROOT_SWITCH, "children": f"ibsw1,{UNPLACED_SWITCH}"},
        {"switch": "ibsw1", "nodes": "h1"},
        {"switch": UNPLACED_SWITCH, "nodes": "h2,h3"},
    ]


def test_the_yaml_holds_a_flat_default_a_block_and_a_tree_topology_each_named_first() -> None:
    blocks = block_topology({f"gb{i}": "a" for i in range(1, 4)} | {"gb4": None}, 3, {"gb4": "powered off (idle~)"})
    tree = tree_topology({"h1": ["0x1"], "h2": ["0x2"]}, [("ibsw1", ["0x1"]), ("ibsw2", ["0x2"])])
    text = topology_yaml(blocks, tree)
    doc = YAML(typ="safe").load(text)
    assert [next(iter(t)) for t in doc] == ["topology"] * 3  # topology.yaml(5): "Must be the first attribute"
    assert [t["topology"] for t in doc] == [FLAT_TOPOLOGY, BLOCK_TOPOLOGY, TREE_TOPOLOGY]
    assert [t["cluster_default"] for t in doc] == [True, False, False]
    assert doc[1]["block"] == {"block_sizes": [3], "blocks": [{"block": "nvl_a_", "nodes": "gb1,gb2,gb3"}]}
    assert doc[2]["tree"]["switches"][0] == {"switch": ROOT_SWITCH, "children": "ibsw1,ibsw2"}
    assert "# nvlink: held out: gb4: powered off (idle~)" in text


def test_a_topology_with_nothing_to_schedule_on_leaves_the_file_alone() -> None:
    with pytest.raises(SlurmError, match="no full NVLink domain of 3 nodes"):
        topology_yaml(block_topology({"gb1": "a"}, 3), None)
    with pytest.raises(SlurmError, match="no InfiniBand partition node is under a known switch"):
        topology_yaml(None, tree_topology({"h1": None}, [("ibsw1", ["0x1"])]))


def test_a_change_in_comments_only_needs_no_reconfigure(tmp_path: Path) -> None:
    """The client has no scontrol in its folder: a reconfigure would raise."""
    domains = {f"gb{i}": "a" for i in range(1, 4)} | {"gb4": None}
    path = tmp_path / "topology.yaml"
    path.write_text(topology_yaml(block_topology(domains, 3, {"gb4": "powered off (idle~)"}), None))
    later = topology_yaml(block_topology(domains, 3, {"gb4": "no fabric report yet"}), None)
    assert converge_yaml(SlurmClient(bin_dir=tmp_path), path, later) is False
    assert "powered off" in path.read_text()


def test_the_link_beside_slurm_conf_is_made_once_and_put_right(tmp_path: Path) -> None:
    etc, sched = tmp_path / "etc" / "slurm", tmp_path / "sched" / "c1"
    etc.mkdir(parents=True)
    sched.mkdir(parents=True)
    link, target = etc / "topology.yaml", sched / "topology.yaml"
    assert link_yaml(link, target) is True and link.readlink() == Path("../../sched/c1/topology.yaml")
    assert link_yaml(link, target) is False
    link.unlink()
    link.write_text("topology: by hand\n")  # a file someone left there is replaced by the link
    assert link_yaml(link, target) is True and link.is_symlink()
    with pytest.raises(SlurmError, match="does not exist: Slurm is not installed here yet"):
        link_yaml(tmp_path / "none" / "topology.yaml", target)


# -- a real slurmctld 25.05+ reading topology.yaml ----------------------------------------------------------------

GB = [f"gb{i}" for i in range(1, 37)]
# Interleaved on purpose, racks and switches alike: a scheduler blind to them splits every job.
RACK_OF = {node: (RACK_A if i % 2 else RACK_B) for i, node in enumerate(GB, start=1)}
RACK_SIZE = 18
IB = [f"h{i}" for i in range(1, 9)]
GUID_OF = {node: f"0x155dfffd34{i:04x}" for i, node in enumerate(IB, start=1)}
LEAVES = {"ibsw1": [GUID_OF[n] for n in IB[0::2]], "ibsw2": [GUID_OF[n] for n in IB[1::2]]}
CPU = ["c1", "c2"]
PARTITIONS = {"gb300": BLOCK_TOPOLOGY, "h100": TREE_TOPOLOGY}  # cpu: none named, the flat cluster default
# Jobs of each node count: 156 on the racks (140 of at most one rack, 16 spanning both), 25 on the switches, each a
# whole leaf or both (4-node jobs that a blind scheduler would spread over both switches). Every job is checked, so a
# scheduler blind to the topology fails at the first split job; the thousand-job mix on the block plugin is
# tests/slurm/test_topology.py's (this test took 321 s of the suite with that mix here too).
MIX = {1: 20, 2: 20, 4: 20, 8: 20, 9: 20, 16: 20, 18: 20, 19: 8, 36: 8}
TREE_MIX = {4: 20, 8: 5}


def _write(reports: Path) -> None:
    reports.mkdir(exist_ok=True)
    for node, rack in RACK_OF.items():
        (reports / f"{node}.txt").write_text(gb_report(rack), encoding="utf-8")
    for node, guid in GUID_OF.items():
        (reports / f"{node}.ibstat").write_text(ibstat_report([guid]), encoding="utf-8")


def _regenerate(cluster: trixie_slurm.TrixieSlurm, reports: Path, switches: Path) -> bool:
    return regenerate_yaml(
        cluster.client,
        rack_partitions=["gb300"],
        tree_partitions=["h100"],
        reports=reports,
        path=cluster.topology_yaml_path,
        block_size=RACK_SIZE,
        switches=switches,
    )


def _records(cluster: trixie_slurm.TrixieSlurm) -> list[tuple[str, str]]:
    """(partition, node hostlist) of each finished job, from the jobcomp/filetxt record."""
    text = cluster.jobcomp.read_text(encoding="utf-8") if cluster.jobcomp.exists() else ""
    return re.findall(r"JobId=\d+ .*?Partition=(\S+) .*?NodeList=(\S+)", text)


def _finished(cluster: trixie_slurm.TrixieSlurm) -> list[tuple[str, set[str]]]:
    """(partition, nodes) of each finished job, each distinct hostlist expanded once by Slurm's own parser."""
    records = _records(cluster)
    expanded = {nodes: set(cluster.client.expand(nodes)) for nodes in {n for _, n in records}}
    return [(part, expanded[nodes]) for part, nodes in records]


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.timeout(900)
def test_racks_as_blocks_and_switches_as_a_tree_each_partition_by_its_own_topology(tmp_path: Path) -> None:
    trixie_slurm.require_topology_yaml()
    reports, switches = tmp_path / "reports", tmp_path / "sharp-topology.txt"
    _write(reports)
    switches.write_text(sharp_file(LEAVES), encoding="utf-8")
    domains = {n: node_domain((reports / f"{n}.txt").read_text(encoding="utf-8"))[0] for n in GB}
    guids = {n: port_guids((reports / f"{n}.ibstat").read_text(encoding="utf-8")) for n in IB}
    initial = topology_yaml(
        block_topology(domains, RACK_SIZE), tree_topology(guids, sharp_switches(sharp_file(LEAVES)))
    )
    others = {"h100": IB, "cpu": CPU}
    with trixie_slurm.running(GB + IB + CPU, "gb300", "", others, topology_yaml=(initial, PARTITIONS)) as cluster:
        racks = [frozenset(n for n in GB if RACK_OF[n] == r) for r in (RACK_A, RACK_B)]
        leaves = [frozenset(n for n in IB if GUID_OF[n] in g) for g in LEAVES.values()]
        assert _regenerate(cluster, reports, switches) is False  # already true: no reconfigure
        # What verify reads as racks: the cluster default is flat, the racks are the named block topology's.
        assert cluster.client.blocks() == {}
        assert {frozenset(nodes) for nodes in cluster.client.blocks(BLOCK_TOPOLOGY).values()} == set(racks)
        for size, count in MIX.items():
            cluster.client.run(
                "sbatch", "-p", "gb300", f"--array=1-{count}", "-N", str(size), "-o", "/dev/null", "--wrap", "true"
            )
        for size, count in TREE_MIX.items():
            cluster.client.run(
                "sbatch", "-p", "h100", f"--array=1-{count}", "-N", str(size), "-o", "/dev/null", "--wrap", "true"
            )
        cluster.client.run("sbatch", "-p", "cpu", "-N", "2", "-o", "/dev/null", "--wrap", "true")
        total = sum(MIX.values()) + sum(TREE_MIX.values()) + 1
        cluster.wait_for(lambda: len(_records(cluster)) >= total, f"{total} jobs to finish", 600)
        done = _finished(cluster)
        rack_jobs = [nodes for part, nodes in done if part == "gb300"]
        small = [nodes for nodes in rack_jobs if len(nodes) <= RACK_SIZE]
        assert len(rack_jobs) == sum(MIX.values()) and len(small) == sum(MIX.values()) - MIX[19] - MIX[36]
        assert all(any(nodes <= rack for rack in racks) for nodes in small)  # 100 % inside one block
        tree_jobs = [nodes for part, nodes in done if part == "h100"]
        assert len(tree_jobs) == sum(TREE_MIX.values())
        assert all(any(nodes <= leaf for leaf in leaves) for nodes in tree_jobs if len(nodes) == 4)  # by the tree
        assert [nodes for part, nodes in done if part == "cpu"] == [set(CPU)]  # flat, never in a block

        # Power event: six nodes of rack B and one node of switch 2 power off. One pass holds rack B out whole, with
        # one reconfigure, and keeps the node under its switch (its last report); the next pass changes nothing.
        gone = [*sorted(racks[1], key=GB.index)[:6], "h2"]
        for node in gone:
            cluster.stop_slurmd(node)
        cluster.scontrol("update", f"NodeName={','.join(gone)}", "State=POWER_DOWN_FORCE", "Reason=deallocated")
        cluster.wait_for(
            lambda: all("~" in n.flags for n in cluster.client.nodes(nodelist=",".join(gone))), "nodes powered off"
        )
        assert _regenerate(cluster, reports, switches) is True
        assert _regenerate(cluster, reports, switches) is False
        doc = YAML(typ="safe").load(cluster.topology_yaml_path.read_text(encoding="utf-8"))
        blocks = [set(cluster.client.expand(b["nodes"])) for b in doc[1]["block"]["blocks"]]
        assert blocks == [set(racks[0])]  # no node in two blocks, none of the part rack
        tree = {s["switch"]: cluster.client.expand(s["nodes"]) for s in doc[2]["tree"]["switches"] if "nodes" in s}
        assert {name: set(nodes) for name, nodes in tree.items()} == {"ibsw1": set(leaves[0]), "ibsw2": set(leaves[1])}
        # slurmctld took it: a job of one rack still runs inside the remaining block, a leaf job under one switch.
        cluster.client.run("sbatch", "--wait", "-p", "gb300", "-N", str(RACK_SIZE), "-o", "/dev/null", "--wrap", "true")
        # h2 is left out of the switch job: in the tree it may be allocated, and this test's nodes never boot again.
        cluster.client.run("sbatch", "--wait", "-p", "h100", "-N", "3", "-x", "h2", "-o", "/dev/null", "--wrap", "true")
        last = [(part, set(cluster.client.expand(nodes))) for part, nodes in _records(cluster)[-2:]]
        assert last[0] == ("gb300", set(racks[0])) and any(last[1][1] <= leaf for leaf in leaves)


def _topology_of(cluster: trixie_slurm.TrixieSlurm, partition: str) -> str:
    found = re.search(r"\bTopology=(\S*)", cluster.scontrol("show", "partition", partition))
    return found.group(1) if found else ""


@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_partitions_written_by_someone_else_get_their_topology_back_after_every_reconfigure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """cyclecloud-slurm writes the partition lines, without `Topology=`: the scheduler's pass sets each partition's
    topology with `scontrol update`, which a reconfigure undoes, and the next pass sets it again. Racks of three."""
    trixie_slurm.require_topology_yaml()
    gb, ib = [f"gb{i}" for i in range(1, 4)], ["h1", "h2"]
    reports, switches = tmp_path / "reports", tmp_path / "sharp-topology.txt"
    reports.mkdir()
    for node in gb:
        (reports / f"{node}.txt").write_text(gb_report(RACK_A), encoding="utf-8")
    for node, guid in zip(ib, ["0x1001", "0x1002"], strict=True):
        (reports / f"{node}.ibstat").write_text(ibstat_report([guid]), encoding="utf-8")
    switches.write_text(sharp_file({"ibsw1": ["0x1001", "0x1002"]}), encoding="utf-8")
    initial = topology_yaml(None, None)  # the flat default alone, as before the first pass
    with trixie_slurm.running(gb + ib, "gb300", "", {"h100": ib}, topology_yaml=(initial, {})) as cluster:
        monkeypatch.setenv("HPCLZ_SLURM_BIN", str(cluster.folder / "bin"))
        argv = ["--rack-partition", "gb300", "--tree-partition", "h100", "--reports", str(reports)]
        argv += ["--yaml", str(cluster.topology_yaml_path), "--switches", str(switches), "--block-size", "3"]
        assert (_topology_of(cluster, "gb300"), _topology_of(cluster, "h100")) == ("", "")
        assert main(argv) == 0 and capsys.readouterr().out.endswith("changed\n")
        assert (_topology_of(cluster, "gb300"), _topology_of(cluster, "h100")) == (BLOCK_TOPOLOGY, TREE_TOPOLOGY)
        assert main(argv) == 0 and capsys.readouterr().out.endswith("unchanged\n")
        cluster.client.run("scontrol", "reconfigure")  # someone else's: slurm.conf's partition lines come back
        cluster.wait_for(lambda: _topology_of(cluster, "gb300") == "", "slurmctld back without the partition topology")
        assert main(argv) == 0 and capsys.readouterr().out.endswith("changed\n")
        assert (_topology_of(cluster, "gb300"), _topology_of(cluster, "h100")) == (BLOCK_TOPOLOGY, TREE_TOPOLOGY)
        cluster.client.run("sbatch", "--wait", "-p", "gb300", "-N", "3", "-o", "/dev/null", "--wrap", "true")
        assert re.search(r"Partition=gb300 .*?NodeList=gb\[1-3\]", cluster.jobcomp.read_text(encoding="utf-8"))

        # A restart drops both partitions' topologies too; the light check (what every slurmctld start queues on the
        # scheduler) sets both back from the topologies the file names, reading no report: here there are none left.
        cluster.stop_slurmctld()
        cluster.start_slurmctld()
        cluster.wait_for(lambda: bool(cluster.client.run("sinfo", "-h")), "slurmctld back after the restart")
        assert (_topology_of(cluster, "gb300"), _topology_of(cluster, "h100")) == ("", "")
        for report in reports.iterdir():
            report.unlink()
        light = ["--reapply", "--rack-partition", "gb300", "--tree-partition", "h100"]
        light += ["--yaml", str(cluster.topology_yaml_path)]
        assert main(light) == 0 and capsys.readouterr().out == "Topology= set again on gb300, h100\n"
        assert (_topology_of(cluster, "gb300"), _topology_of(cluster, "h100")) == (BLOCK_TOPOLOGY, TREE_TOPOLOGY)
        assert main(light) == 0 and capsys.readouterr().out == "partition topologies: unchanged\n"


def test_a_rack_partitions_idle_time_is_a_warning_and_never_slurms_suspend_time() -> None:
    """HPCLZ-CMP-073: the racks are out of auto-suspend; their 5 minutes is not the cluster's SuspendTime, or
    HPCLZ-COST-005 would flag h100 and h200 (60 minutes) as stopped after 5."""
    idle = _all(*(_set(f"compute.partitions.{i}.idle_shutdown_minutes", m) for i, m in ((0, 60), (1, 60), (2, 5))))
    case = Case("ai-training", idle)
    assert [f.rule_id for f in _findings("HPCLZ-CMP-073", case)] == ["HPCLZ-CMP-073"]
    assert _findings("HPCLZ-COST-005", case) == []


def test_a_small_partition_beside_racks_is_no_finding_once_slurm_reads_topology_yaml() -> None:
    """HPCLZ-CMP-072 warns only where topology.conf's one cluster-wide plugin needs every partition to fill a block."""
    small = _set("compute.partitions.1.max_nodes", 8)
    assert _findings("HPCLZ-CMP-072", Case("ai-training", small)) == []  # the preset's Slurm 25.11.5
    before = Case("ai-training", _all(small, _set("compute.cyclecloud.slurm_version", "24.11.5")))
    assert [f.rule_id for f in _findings("HPCLZ-CMP-072", before)] == ["HPCLZ-CMP-072"]


def _old_tree_text(leaves: dict[str, list[str]]) -> str:
    """topology.yaml as the scheduler wrote it before powered-off and unreported nodes stayed in the tree: only the
    nodes up and reported under their switches, the others in no switch."""
    placed = TreeTopology(leaves=tuple(Switch(name, nodes=tuple(nodes)) for name, nodes in leaves.items()), unplaced=())
    return topology_yaml(None, placed)


@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_powered_off_tree_nodes_stay_in_the_tree_so_a_multi_node_job_powers_them_up(tmp_path: Path) -> None:
    """Five InfiniBand nodes under two switches: h3 and h4 power off after reporting, h5 powers off before it ever
    reported. Slurm (26.05.5) allocates a node, and so powers it up (ResumeProgram), only when the tree holds it."""
    trixie_slurm.require_topology_yaml()
    ib = ["h1", "h2", "h3", "h4", "h5"]
    guid = {node: f"0x2{i:03x}" for i, node in enumerate(ib[:4], start=1)}
    reports, switches = tmp_path / "reports", tmp_path / "sharp-topology.txt"
    reports.mkdir()
    for node, g in guid.items():
        (reports / f"{node}.ibstat").write_text(ibstat_report([g]), encoding="utf-8")
    switches.write_text(sharp_file({"ibsw1": [guid["h1"], guid["h3"]], "ibsw2": [guid["h2"], guid["h4"]]}))
    old = _old_tree_text({"ibsw1": ["h1"], "ibsw2": ["h2"]})
    topology = (old, {"h100": TREE_TOPOLOGY})
    with trixie_slurm.running(ib, "h100", "", topology_yaml=topology, note_resume=True) as cluster:
        off = ["h3", "h4", "h5"]
        for node in off:
            cluster.stop_slurmd(node)
        cluster.scontrol("update", f"NodeName={','.join(off)}", "State=POWER_DOWN_FORCE", "Reason=deallocated")
        cluster.wait_for(
            lambda: all("~" in n.flags for n in cluster.client.nodes(nodelist=",".join(off))), "nodes powered off"
        )
        # The old tree: a job needing the powered-off nodes is refused, and none is powered up.
        with pytest.raises(SlurmError, match="Requested node configuration is not available"):
            cluster.client.run("sbatch", "-p", "h100", "-N", "4", "-o", "/dev/null", "--wrap", "true")
        assert not cluster.resumed.exists()

        # One pass: h3 and h4 under the switches of their last reports, h5 under the unplaced switch.
        link = cluster.etc / "topology.yaml"
        assert regenerate_yaml(
            cluster.client,
            rack_partitions=[],
            tree_partitions=["h100"],
            reports=reports,
            path=cluster.topology_yaml_path,
            block_size=RACK_SIZE,
            switches=switches,
            link=link,
        )
        doc = YAML(typ="safe").load(cluster.topology_yaml_path.read_text(encoding="utf-8").split("---\n", 1)[1])
        (tree,) = [t for t in doc if t["topology"] == TREE_TOPOLOGY]
        assert {s["switch"]: s.get("nodes") or s.get("children") for s in tree["tree"]["switches"]} == {
            ROOT_SWITCH: f"ibsw1,ibsw2,{UNPLACED_SWITCH}",
            "ibsw1": "h1,h3",
            "ibsw2": "h2,h4",
            UNPLACED_SWITCH: "h5",
        }
        # A job of every node, across the three leaves: accepted, and Slurm powers up the three nodes for it.
        cluster.client.run("sbatch", "-p", "h100", "-N", "5", "-o", "/dev/null", "--wrap", "true")
        cluster.wait_for(lambda: cluster.resumed.exists(), "ResumeProgram to run")
        resumed = {n for line in cluster.resumed.read_text().split() for n in cluster.client.expand(line)}
        assert resumed == set(off)
        job = cluster.client.run("squeue", "-h", "-p", "h100", "-o", "%T %N")
        assert job.split()[0] == "CONFIGURING" and set(cluster.client.expand(job.split()[1])) == set(ib)
