"""The InfiniBand tree's wiring as ai-training renders it: the node's hpclz-ib-report run as rendered against
`ibstatus`/`ibstat` stand-ins, and the scheduler's hpclz-topology command run as rendered on a real slurmctld 26.05
(Debian sid, tests/support/trixie_slurm.py), reading SHARP's switch grouping through a real `srun` on an idle node.

The inputs are cyclecloud-slurm's own test inputs (tests/slurm/fixtures/README.md): the port GUIDs of its 16 hosts and
its `sharp_cmd topology` output. `ibstatus`, `ibstat`, `sharp_hello` and `sharp_cmd` are stand-ins printing the
formats azslurm's commands read (Azure/cyclecloud-slurm@049346f azure-slurm/slurmcc/topology.py l.337-338,
l.392-407, l.425-438), not captures: no InfiniBand fabric is reachable here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from hpclz.slurm.sharp import ASKED
from hpclz.slurm.topology_yaml import ROOT_SWITCH, TREE_TOPOLOGY, port_guids
from tests.render.test_cloudinit import _artifacts
from tests.slurm.test_topology import RACK_A, gb_report
from tests.slurm.test_topology_wiring import as_test_cluster, rendered_service
from tests.slurm.test_topology_yaml import ibstat_report
from tests.support import trixie_slurm
from tests.support.renamed_host import RenamedHost

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_guids() -> dict[str, list[str]]:
    """Each of cyclecloud-slurm's test hosts' port GUIDs, as SHARP writes them (no 0x00)."""
    guids: dict[str, list[str]] = defaultdict(list)
    for line in (FIXTURES / "nodes-guids.txt").read_text(encoding="utf-8").splitlines():
        host, guid = line.split(":")
        guids[host.strip()].append(guid.strip())
    return dict(guids)


# Test nodes standing for fixture hosts: in its sharp output hpc-36 and hpc-39 are under ibsw1, hpc-40 and hpc-43
# under ibsw15, hpc-47 under ibsw33.
AS_HOST = {"h1": "hpcbench-hpc-36", "h2": "hpcbench-hpc-39", "h3": "hpcbench-hpc-40", "h4": "hpcbench-hpc-43"}
H200 = {"h5": "hpcbench-hpc-47"}
GB = ["gb1", "gb2", "gb3"]


def _script(template: str, name: str) -> str:
    return template.split(f"/opt/hpclz/bin/{name} <<'HPCLZ_EOF'\n", 1)[1].split("\nHPCLZ_EOF", 1)[0] + "\n"


def test_only_the_infiniband_partitions_nodes_report_ibstat() -> None:
    template = _artifacts("ai-training")["cyclecloud/slurm-cluster.txt"]
    # Each partition's node script is one [[nodearray]]; the rack partition reports nvidia-smi, h100/h200 ibstat.
    arrays = dict(re.findall(r"\[\[nodearray (\S+)\]\](.*?)(?=\[\[nodearray |\Z)", template, re.S))
    reporting = {name for name, body in arrays.items() if "hpclz-ib-report.service" in body}
    assert reporting and all("gb" not in name for name in reporting)
    assert all("hpclz-ib-report.service" not in body for name, body in arrays.items() if "gb300" in name)
    assert "ExecStart=/opt/hpclz/bin/hpclz-ib-report /sched/aitrain-prod/hpclz-fabric" in template


@pytest.mark.timeout(120)
def test_a_node_reports_the_ibstat_of_its_mlx5_ib_devices(tmp_path: Path) -> None:
    """The node side as rendered. `ibstatus` prints a status line per device (azslurm keeps the mlx5_ib lines and
    cuts the third space-separated field, the device name in quotes that xargs strips), including the Ethernet
    mlx5_an0 of accelerated networking, which is left out; `ibstat <dev>` prints that device with its Port GUID
    (0x00-prefixed, the form azslurm strips, topology.py l.353-357)."""
    guids = fixture_guids()["hpcbench-hpc-36"]
    bin_dir, reports = tmp_path / "bin", tmp_path / "fabric"
    bin_dir.mkdir()
    reports.mkdir()
    (bin_dir / "ibstatus").write_text(
        "#!/bin/sh\n"
        + "".join(f"echo \"Infiniband device 'mlx5_ib{i}' port 1 status:\"\n" for i in range(len(guids)))
        + "echo \"Infiniband device 'mlx5_an0' port 1 status:\"\n"
    )
    ibstat = '#!/bin/sh\necho "$1" >>' + str(tmp_path / "asked") + "\ncase $1 in\n"
    for i, guid in enumerate(guids):
        body = ibstat_report([guid]).replace("mlx5_ib0", f"mlx5_ib{i}")
        ibstat += f"mlx5_ib{i}) cat <<'EOF'\n{body}EOF\n;;\n"
    ibstat += "*) exit 1;;\nesac\n"
    (bin_dir / "ibstat").write_text(ibstat)
    for tool in ("ibstatus", "ibstat"):
        (bin_dir / tool).chmod(0o755)
    script = tmp_path / "hpclz-ib-report"
    script.write_text(_script(_artifacts("ai-training")["cyclecloud/slurm-cluster.txt"], "hpclz-ib-report"))
    env = os.environ | {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    # The service starts before cyclecloud-slurm renames the host to its Slurm node name (tests/support/renamed_host.py):
    # nothing is written under the VM's first name, which Slurm does not know; the report lands under h1's.
    host = RenamedHost(bin_dir, "vm4f2a0000001", ["h1", "h2"])
    proc = subprocess.Popen(["bash", str(script), str(reports)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        while not host.calls():
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        assert host.calls()[0] == "show node vm4f2a0000001"
        assert list(reports.iterdir()) == []
        host.rename("h1.internal.cloudapp.net")
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0 and out.strip() == f"hpclz-ib-report: wrote {reports}/h1.ibstat"
    assert [p.name for p in reports.iterdir()] == ["h1.ibstat"]
    assert (tmp_path / "asked").read_text().split() == [f"mlx5_ib{i}" for i in range(len(guids))]
    assert port_guids((reports / "h1.ibstat").read_text(encoding="utf-8")) == guids


def _fake_sharp(folder: Path, hello_ok: bool) -> None:
    """sharp_hello and sharp_cmd under <folder>/hpcx/sharp/bin, as HPC-X lays them out (topology.py l.276, l.397).
    sharp_cmd notes its arguments and environment, and writes the fixture's leaf lines for the GUIDs asked for."""
    bin_dir = folder / "hpcx" / "sharp" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    inside = f"{trixie_slurm.INSIDE}/hpcx"
    (bin_dir / "sharp_hello").write_text("#!/bin/sh\necho hello\n" + ("" if hello_ok else "exit 1\n"))
    (folder / "hpcx" / "topology.txt").write_bytes((FIXTURES / "sharp-topology.txt").read_bytes())
    (bin_dir / "sharp_cmd").write_text(
        "#!/bin/sh\n"
        f'echo "$SHARP_SMX_UCX_INTERFACE $*" >>{inside}/calls\n'
        "while [ $# -gt 0 ]; do case $1 in --guids_file) g=$2;; --topology_file) t=$2;; esac; shift; done\n"
        f'cp "$g" {inside}/asked\n'
        'awk -v F="$g" \'BEGIN {while ((getline l < F) > 0) want[l] = 1}\n'
        '  {split($2, kv, "="); n = split(kv[2], gs, ","); out = ""\n'
        '   for (i = 1; i <= n; i++) if (gs[i] in want) out = out (out == "" ? "" : ",") gs[i]\n'
        f'   if (out != "") print $1 " Nodes=" out}}\' {inside}/topology.txt >"$t"\n'
    )
    for tool in ("sharp_hello", "sharp_cmd"):
        (bin_dir / tool).chmod(0o755)


def _run(cluster: trixie_slurm.TrixieSlurm, sharp: bool) -> subprocess.CompletedProcess[str]:
    """The rendered command, /sched/aitrain-prod pointing at the test cluster's folder, racks of three VMs;
    SHARP_CMD (azslurm's own override, topology.py l.392-407) names the stand-in when `sharp`."""
    argv = as_test_cluster(rendered_service(None)[1:], cluster)
    argv[argv.index("--block-size") + 1] = "3"
    env = os.environ | {"HPCLZ_SLURM_BIN": str(cluster.folder / "bin")}
    env.pop("SHARP_CMD", None)
    if sharp:
        env["SHARP_CMD"] = f"{trixie_slurm.INSIDE}/hpcx/"
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, timeout=300, check=False)


@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_the_rendered_service_builds_the_tree_from_sharp_through_srun_and_stays_flat_without_it() -> None:
    trixie_slurm.require_topology_yaml()
    others = {"h100": list(AS_HOST), "h200": list(H200)}
    with trixie_slurm.running(
        GB + list(AS_HOST) + list(H200), "gb300", "", others, site_specific=True, topology_yaml=("", {})
    ) as cluster:
        reports = cluster.folder / "hpclz-fabric"
        reports.mkdir()
        for node in GB:
            (reports / f"{node}.txt").write_text(gb_report(RACK_A), encoding="utf-8")
        guids = fixture_guids()
        for node, host in (AS_HOST | H200).items():
            (reports / f"{node}.ibstat").write_text(ibstat_report(guids[host]), encoding="utf-8")
        calls = cluster.folder / "hpcx" / "calls"

        # No SHARP on the node (no /opt/hpcx-* in the chroot): the racks are written, the tree partitions stay flat.
        first = _run(cluster, sharp=False)
        assert first.returncode == 0, first.stdout + first.stderr
        assert "infiniband: h100, h200 stay flat: SHARP's switch grouping not read on h1: no SHARP on" in first.stdout
        assert (cluster.live_partition_topology("gb300"), cluster.live_partition_topology("h100")) == ("nvlink", "")
        assert TREE_TOPOLOGY not in cluster.topology_yaml_path.read_text()

        # sharp_hello fails: SHARP disabled on the fabric, still flat, still nothing guessed.
        _fake_sharp(cluster.folder, hello_ok=False)
        second = _run(cluster, sharp=True)
        assert second.returncode == 0 and "SHARP is disabled on the fabric" in second.stdout, second.stdout
        assert cluster.live_partition_topology("h100") == "" and not calls.exists()

        # SHARP answers: one sharp_cmd run with every reported GUID, a leaf per switch, both partitions on the tree.
        _fake_sharp(cluster.folder, hello_ok=True)
        third = _run(cluster, sharp=True)
        assert third.returncode == 0 and third.stdout.endswith("changed\n"), third.stdout + third.stderr
        (call,) = calls.read_text().splitlines()
        assert call.startswith("mlx5_ib0:1 topology --ib-dev mlx5_ib0:1 --guids_file ")
        wanted = sorted(g for host in (AS_HOST | H200).values() for g in guids[host])
        assert sorted((cluster.folder / "hpcx" / "asked").read_text().split()) == wanted
        kept = (reports / "sharp-topology.txt").read_text().splitlines()
        assert kept[0] == ASKED + ",".join(wanted)
        doc = next(iter(YAML(typ="safe").load_all(cluster.topology_yaml_path.read_text())))
        (tree,) = [t for t in doc if t["topology"] == TREE_TOPOLOGY]
        leaves = {s["switch"]: cluster.client.expand(s["nodes"]) for s in tree["tree"]["switches"] if "nodes" in s}
        assert leaves == {"ibsw1": ["h1", "h2"], "ibsw15": ["h3", "h4"], "ibsw33": ["h5"]}
        assert tree["tree"]["switches"][0] == {"switch": ROOT_SWITCH, "children": "ibsw1,ibsw15,ibsw33"}
        assert [cluster.live_partition_topology(p) for p in ("gb300", "h100", "h200")] == [
            "nvlink",
            "infiniband",
            "infiniband",
        ]

        # Converged, and SHARP is not asked again while no new GUID reports.
        fourth = _run(cluster, sharp=True)
        assert fourth.returncode == 0 and fourth.stdout.endswith("unchanged\n"), fourth.stdout + fourth.stderr
        assert len(calls.read_text().splitlines()) == 1

        # h5's VM comes back with other ports (hpc-48's, under the same switch): a GUID SHARP was not asked about, so
        # SHARP is asked again, and the tree does not change.
        (reports / "h5.ibstat").write_text(ibstat_report(guids["hpcbench-hpc-48"]), encoding="utf-8")
        fifth = _run(cluster, sharp=True)
        assert fifth.returncode == 0 and fifth.stdout.endswith("unchanged\n"), fifth.stdout + fifth.stderr
        assert len(calls.read_text().splitlines()) == 2
        assert set(guids["hpcbench-hpc-48"]) <= set((cluster.folder / "hpcx" / "asked").read_text().split())

        # A two-node job on h100 runs under one leaf switch.
        cluster.client.run("sbatch", "--wait", "-p", "h100", "-N", "2", "-o", "/dev/null", "--wrap", "true")
        ran = re.findall(r"Partition=h100 .*?NodeList=(\S+)", cluster.jobcomp.read_text(encoding="utf-8"))
        assert [cluster.client.expand(n) for n in ran][-1] in (["h1", "h2"], ["h3", "h4"])
