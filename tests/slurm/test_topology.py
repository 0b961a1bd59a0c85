"""Block topology for rack-scale GPUs: parsing what nodes report, grouping them, and a real slurmctld 24.11 that
schedules by it (tests/support/trixie_slurm.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpclz.slurm.client import NodeInfo, SlurmClient, SlurmError
from hpclz.slurm.topology import (
    block_topology,
    converge,
    main,
    node_domain,
    parse_fabric,
    partition_blocks,
    plugin_lines,
    regenerate,
)
from tests.conftest import REPO
from tests.support import trixie_slurm

# A real `nvidia-smi -q` (H100, driver 580.159.04, tests/fixtures/gpu/README.md): its Fabric section is N/A.
H100_Q = (REPO / "tests" / "fixtures" / "gpu" / "h100" / "nvidia-smi-q.txt").read_text(encoding="utf-8")
# Rack identities as cyclecloud-slurm's README prints them for GB200 racks, "ClusterUUID and CliqueID:
# b78ed242-7b98-426f-b194-b76b8899f4ec 32766" (Azure/cyclecloud-slurm@50e6739, release 4.0.9, README.md l.352-361).
RACK_A = ("b78ed242-7b98-426f-b194-b76b8899f4ec", "32766")
RACK_B = ("cc79d754-915f-408b-b1c3-b8c3aa6668ab", "32766")
RACK_C = ("0e568355-d588-4a53-8166-8200c2c1ef55", "32766")
GPUS_PER_VM = 4  # ND GB200 v6 / GB300 v6: four GPUs per VM (catalog)


def gb_report(rack: tuple[str, str], state: str = "Completed", status: str = "Success") -> str:
    """A GB-class node's `nvidia-smi -q`: the real H100 capture's GPU section, four times, with the Fabric
    fields set as a registered GPU of an NVL72 rack reports them (same field names and layout)."""
    header, gpu = H100_Q.split("\nGPU ", 1)
    uuid, clique = rack
    fabric = (
        f"    Fabric\n        State{' ' * 42}: {state}\n        Status{' ' * 41}: {status}\n"
        f"        CliqueId{' ' * 39}: {clique}\n        ClusterUUID{' ' * 36}: {uuid}\n"
    )
    gpu = re.sub(r"    Fabric\n(        \S.*\n){4}", fabric, gpu)
    return header + "".join(f"\nGPU {gpu}" for _ in range(GPUS_PER_VM))


def test_a_gpu_outside_a_multi_node_domain_has_none() -> None:
    (gpu,) = parse_fabric(H100_Q)
    assert (gpu.state, gpu.clique_id, gpu.cluster_uuid, gpu.domain) == ("N/A", "N/A", "N/A", None)
    assert node_domain(H100_Q) == (None, "GPU 0 fabric not registered (N/A)")


def test_a_registered_rack_node_reports_its_domain() -> None:
    text = gb_report(RACK_A)
    assert len(parse_fabric(text)) == GPUS_PER_VM
    assert node_domain(text) == (f"{RACK_A[0]}_{RACK_A[1]}", "")
    assert node_domain(gb_report(RACK_A, state="In Progress"))[0] is None


def test_gpus_that_disagree_give_no_domain() -> None:
    mixed = gb_report(RACK_A).replace(RACK_A[0], RACK_B[0], 1)
    assert node_domain(mixed) == (None, "GPUs report 2 different NVLink domains")


def test_a_part_rack_is_held_out_whole() -> None:
    domains = {f"gb{i}": ("a" if i <= 18 else "b") for i in range(1, 31)}
    topo = block_topology(domains, 18)
    assert [(b.domain, len(b.nodes)) for b in topo.blocks] == [("a", 18)]
    assert len(topo.held_out) == 12 and all("part rack: 12 of 18" in why for _, why in topo.held_out)
    assert "BlockSizes=18" in topo.conf()


@given(st.dictionaries(st.from_regex(r"gb[0-9]{1,3}", fullmatch=True), st.sampled_from(["a", "b", "c", None])))
def test_no_node_is_in_two_blocks_and_every_node_is_placed_once(domains: dict[str, str | None]) -> None:
    topo = block_topology(domains, 3)
    placed = [n for b in topo.blocks for n in b.nodes] + [n for n, _ in topo.held_out]
    assert sorted(placed) == sorted(domains)
    assert all(len(b.nodes) >= 3 and {domains[n] for n in b.nodes} == {b.domain} for b in topo.blocks)


def test_no_full_rack_leaves_the_topology_file_alone(tmp_path: Path) -> None:
    conf = tmp_path / "topology.conf"
    conf.write_text("BlockName=old Nodes=gb[1-18]\nBlockSizes=18\n")
    with pytest.raises(SlurmError, match="no full NVLink domain of 18 nodes"):
        converge(SlurmClient(bin_dir=tmp_path), conf, block_topology({"gb1": "a", "gb2": None}, 18))
    assert conf.read_text().startswith("BlockName=old")


def test_a_change_in_comments_only_needs_no_reconfigure(tmp_path: Path) -> None:
    """A held-out node's reason changes (powered off, then part rack) while the blocks stay: nothing for Slurm.
    The client has no scontrol in its folder, so a reconfigure would raise."""
    domains = {f"gb{i}": "a" for i in range(1, 19)} | {"gb19": None}
    conf = tmp_path / "topology.conf"
    conf.write_text(block_topology(domains, 18, {"gb19": "powered off (idle~)"}).conf())
    later = block_topology(domains, 18, {"gb19": "no fabric report yet"})
    assert converge(SlurmClient(bin_dir=tmp_path), conf, later) is False
    assert "powered off" in conf.read_text()


def test_other_partitions_get_one_block_each_and_a_small_one_keeps_the_plugin_off() -> None:
    """topology/block is cluster-wide, and a node in no block gets no job (tests/slurm/test_topology_wiring.py)."""
    nodes = [NodeInfo(f"h{i}", "idle~", partitions=("h100",)) for i in range(1, 19)]
    (block,) = partition_blocks(nodes, 18)
    assert (block.name, len(block.nodes), block.nodes[:2]) == ("partition_h100", 18, ("h1", "h2"))
    small = [*nodes, NodeInfo("c1", "idle", partitions=("cpu", "all")), NodeInfo("c2", "idle", partitions=("cpu",))]
    with pytest.raises(SlurmError, match=r"partition cpu \(2 nodes\) has fewer nodes than a block of 18"):
        partition_blocks(small, 18)


def test_a_site_conf_that_chose_another_topology_plugin_is_left_alone(tmp_path: Path) -> None:
    """Nothing is written and nothing reconfigured (the client has no scontrol: a reconfigure would raise)."""
    site, conf = tmp_path / "site_specific.conf", tmp_path / "topology.conf"
    site.write_text("TopologyPlugin=topology/tree\n")
    topology = block_topology({f"gb{i}": "a" for i in range(1, 19)}, 18)
    with pytest.raises(SlurmError, match=r"sets TopologyPlugin=topology/tree; .* needs TopologyPlugin=topology/block"):
        converge(SlurmClient(bin_dir=tmp_path), conf, topology, (site, plugin_lines(["gb300"])))
    assert site.read_text() == "TopologyPlugin=topology/tree\n" and not conf.exists()


def test_a_site_conf_that_already_holds_the_lines_needs_no_reconfigure(tmp_path: Path) -> None:
    site, conf = tmp_path / "site_specific.conf", tmp_path / "topology.conf"
    topology = block_topology({f"gb{i}": "a" for i in range(1, 19)}, 18)
    site.write_text("# kept\n" + "\n".join(plugin_lines(["gb300"])) + "\n")
    conf.write_text(topology.conf())
    assert converge(SlurmClient(bin_dir=tmp_path), conf, topology, (site, plugin_lines(["gb300"]))) is False
    assert plugin_lines(["gb300", "gb200"])[2] == "SuspendExcParts=gb200,gb300"


# -- a real slurmctld with topology/block ---------------------------------------------------------------------

NODES = [f"gb{i}" for i in range(1, 37)]
# Interleaved on purpose: a scheduler blind to racks fills gb1..gb18 and splits every job across both racks.
RACK_OF = {node: (RACK_A if i % 2 else RACK_B) for i, node in enumerate(NODES, start=1)}
RACK_SIZE = 18
# Node counts and how many jobs of each: 1,000 jobs, 910 of at most one rack, 90 spanning both.
MIX = {1: 130, 2: 130, 4: 130, 8: 130, 9: 130, 16: 130, 18: 130, 19: 45, 36: 45}
JOBS = sum(MIX.values())


def _write_reports(folder: Path, racks: dict[str, tuple[str, str]]) -> None:
    folder.mkdir(exist_ok=True)
    for node, rack in racks.items():
        (folder / f"{node}.txt").write_text(gb_report(rack), encoding="utf-8")


def _regenerate(cluster: trixie_slurm.TrixieSlurm, reports: Path) -> bool:
    return regenerate(cluster.client, cluster.partition, reports, cluster.topology_conf, RACK_SIZE)


def _shown_blocks(cluster: trixie_slurm.TrixieSlurm) -> dict[str, set[str]]:
    blocks: dict[str, set[str]] = {}
    for line in cluster.scontrol("show", "topology").splitlines():
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        if "BlockName" in fields:
            blocks[fields["BlockName"]] = set(cluster.client.expand(fields["Nodes"]))
    return blocks


def _finished_jobs(cluster: trixie_slurm.TrixieSlurm) -> dict[str, tuple[str, int]]:
    """Job ID -> (its nodes as a hostlist, node count), from the jobcomp/filetxt record of finished jobs."""
    text = cluster.jobcomp.read_text(encoding="utf-8") if cluster.jobcomp.exists() else ""
    return {job: (nodes, int(count)) for job, nodes, count in re.findall(_JOBCOMP, text)}


_JOBCOMP = re.compile(r"JobId=(\d+) .*?NodeList=(\S+) NodeCnt=(\d+)")


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.timeout(900)
def test_jobs_of_up_to_one_rack_land_in_one_block_and_topology_follows_power_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trixie_slurm.require_trixie()
    reports = tmp_path / "fabric"
    _write_reports(reports, RACK_OF)
    # slurmctld needs a topology at start: the one the same reports give.
    domains = {n: node_domain((reports / f"{n}.txt").read_text(encoding="utf-8"))[0] for n in NODES}
    initial = block_topology(domains, RACK_SIZE).conf()
    # Four CPUs a node, so up to four one-CPU-a-node jobs share a node: slurmctld started jobs here only on whole
    # seconds (its log: 65 waves of two 18-node jobs took 61 s, every "sched: Allocate" at hh:mm:ss.00x), so the
    # mix took one second per wave of jobs that fill the cluster, 313 waves with one CPU a node (281 s here, 329 s
    # in a loaded full run). Four jobs to a node make it about 83 waves, and more jobs compete for each rack at once.
    with trixie_slurm.running(NODES, "gpu", initial, cpus=4) as cluster:
        racks = {frozenset(n for n in NODES if RACK_OF[n] == r) for r in (RACK_A, RACK_B)}
        assert {frozenset(b) for b in _shown_blocks(cluster).values()} == racks
        assert _regenerate(cluster, reports) is False  # already true: no reconfigure

        # A thousand jobs in one mix: job arrays of each size, submitted together, so their tasks queue and run
        # side by side (each task is its own job with its own allocation, each a line in the jobcomp record).
        for size, count in MIX.items():
            cluster.client.run("sbatch", f"--array=1-{count}", "-N", str(size), "-o", "/dev/null", "--wrap", "true")
        cluster.wait_for(lambda: len(_finished_jobs(cluster)) >= JOBS, f"{JOBS} jobs to finish", 600)
        finished = _finished_jobs(cluster)
        small = [set(cluster.client.expand(nodes)) for nodes, n in finished.values() if n <= RACK_SIZE]
        inside = [nodes for nodes in small if any(nodes <= rack for rack in racks)]
        assert len(finished) == JOBS and len(small) == JOBS - MIX[19] - MIX[36]
        assert len(inside) == len(small)  # 100 % of the jobs of at most one rack ran inside one block

        # Power event: six nodes of rack B power off (their VMs deallocated). Rack B is now a part rack: held out
        # whole in one reconfigure, and slurmctld stays up (a part block would be fatal, see hpclz.slurm.topology).
        rack_a, rack_b = (frozenset(n for n in NODES if RACK_OF[n] == r) for r in (RACK_A, RACK_B))
        gone = sorted(rack_b, key=NODES.index)[:6]
        for node in gone:
            cluster.stop_slurmd(node)
        cluster.scontrol("update", f"NodeName={','.join(gone)}", "State=POWER_DOWN_FORCE", "Reason=deallocated")
        cluster.wait_for(lambda: _powered_off(cluster, gone), "six nodes powered off")
        assert _regenerate(cluster, reports) is True
        assert _regenerate(cluster, reports) is False  # converged within one reconfigure
        assert list(_shown_blocks(cluster).values()) == [set(rack_a)]

        # Power up: the six come back (powering up, `#`), placed by Azure in a third rack, which is only a part
        # rack (6 of 18): still held out, nothing to reconfigure. Then rack B's other twelve report rack C too (their
        # VMs were reallocated): rack C is whole, one reconfigure makes it a block beside rack A.
        for node in gone:
            RACK_OF[node] = RACK_C
        _write_reports(reports, {n: RACK_C for n in gone})
        cluster.scontrol("update", f"NodeName={','.join(gone)}", "State=POWER_UP")
        cluster.wait_for(lambda: _powering_up(cluster, gone), "six nodes powering up")
        assert _regenerate(cluster, reports) is False
        moved = sorted(rack_b - set(gone), key=NODES.index)
        _write_reports(reports, {n: RACK_C for n in moved})
        assert _regenerate(cluster, reports) is True
        assert _regenerate(cluster, reports) is False
        assert sorted(map(sorted, _shown_blocks(cluster).values())) == sorted([sorted(rack_a), sorted(rack_b)])

        # The scheduler's entry point reads the same state and finds nothing to change.
        monkeypatch.setenv("HPCLZ_SLURM_BIN", str(cluster.folder / "bin"))
        argv = ["--partition", "gpu", "--reports", str(reports), "--conf", str(cluster.topology_conf)]
        assert main(argv) == 0
        assert capsys.readouterr().out.endswith("unchanged\n")


def _powering_up(cluster: trixie_slurm.TrixieSlurm, nodes: list[str]) -> bool:
    return all("#" in n.flags for n in cluster.client.nodes(nodelist=",".join(nodes)))


def _powered_off(cluster: trixie_slurm.TrixieSlurm, nodes: list[str]) -> bool:
    """Fully off (`~`): a power up asked while a node is still powering down (`%`) was seen to be dropped."""
    return all("~" in n.flags for n in cluster.client.nodes(nodelist=",".join(nodes)))
