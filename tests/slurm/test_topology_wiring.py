"""The block topology's wiring as ai-training renders it into its cluster, driven on a real slurmctld 24.11
(tests/support/trixie_slurm.py): the scheduler's hpclz-topology service, run with the arguments its rendered unit
gives, against a cluster whose slurm.conf includes site_specific.conf and starts without the block plugin, as
cyclecloud-slurm's does (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/templates/slurm.conf.template l.77)."""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpclz.config import load_config_text
from hpclz.render.build import build_plan
from hpclz.slurm.client import SlurmError
from hpclz.slurm.topology import node_domain, plugin_lines
from tests.conftest import PRESETS
from tests.render.test_cloudinit import _artifacts
from tests.slurm.test_topology import RACK_A, RACK_B, gb_report
from tests.support import trixie_slurm
from tests.support.renamed_host import RenamedHost

# Racks of three VMs here instead of 18 (the unit's --block-size is replaced): the same rules, a third of the daemons.
RACK = 3
RACK_NODES = [f"gb{i}" for i in range(1, 6)]
OTHER_NODES = [f"h{i}" for i in range(1, 4)]


# ai-training pins Slurm 25.11.5, which reads topology.yaml; before 25.05 the scheduler writes topology.conf.
BEFORE_YAML = "24.11.5"


def _cluster_template(slurm_version: str | None = None) -> str:
    if slurm_version is None:
        return _artifacts("ai-training")["cyclecloud/slurm-cluster.txt"]
    path = next(p for p in PRESETS if p.stem == "ai-training")
    text = path.read_text(encoding="utf-8").replace("slurm_version: 25.11.5", f"slurm_version: {slurm_version}")
    assert f"slurm_version: {slurm_version}" in text
    (compute,) = [
        d for d in build_plan(load_config_text(text, str(path)).config).deployments if d.component == "compute"
    ]
    return compute.artifacts["cyclecloud/slurm-cluster.txt"]


def rendered_service(slurm_version: str | None = BEFORE_YAML) -> list[str]:
    """ExecStart of hpclz-topology.service in ai-training's cluster template (the scheduler's cloud-init), as the
    preset renders it (None) or with another Slurm version."""
    template = _cluster_template(slurm_version)
    unit = template.split("/etc/systemd/system/hpclz-topology.service <<'HPCLZ_EOF'\n", 1)[1].split("HPCLZ_EOF", 1)[0]
    (line,) = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    return shlex.split(line.removeprefix("ExecStart="))


def test_the_scheduler_unit_runs_the_generator_on_the_racks_paths() -> None:
    argv = rendered_service(None)
    assert argv[:3] == ["/opt/hpclz/venv/bin/python", "-m", "hpclz.slurm.topology_yaml"]
    # The rack partition as blocks, the preset's InfiniBand partitions (h100, h200: `infiniband: true`) as a tree.
    assert list(zip(argv[3::2], argv[4::2], strict=True)) == [
        ("--rack-partition", "gb300"),
        ("--tree-partition", "h100"),
        ("--tree-partition", "h200"),
        ("--block-size", "18"),
        ("--switches", "/sched/aitrain-prod/hpclz-fabric/sharp-topology.txt"),
        ("--reports", "/sched/aitrain-prod/hpclz-fabric"),
        ("--yaml", "/sched/aitrain-prod/topology.yaml"),
        ("--link", "/etc/slurm/topology.yaml"),
        ("--site-conf", "/sched/aitrain-prod/site_specific.conf"),
    ]
    argv = rendered_service(BEFORE_YAML)
    assert argv[:3] == ["/opt/hpclz/venv/bin/python", "-m", "hpclz.slurm.topology"]
    options = dict(zip(argv[3::2], argv[4::2], strict=True))
    assert options == {
        "--partition": "gb300",
        "--reports": "/sched/aitrain-prod/hpclz-fabric",
        "--conf": "/sched/aitrain-prod/topology.conf",
        "--site-conf": "/sched/aitrain-prod/site_specific.conf",
        "--block-size": "18",
    }


def test_every_node_links_topology_yaml_as_the_scheduler_does() -> None:
    """slurmd reads topology.yaml beside /etc/slurm/slurm.conf as slurmctld does (hpclz.render.cloudinit
    TOPOLOGY_YAML_LINK): each nodearray's script (login included: `scontrol show topology` reads it too) makes the link the scheduler's pass makes, from Slurm 25.05 only."""
    template = _cluster_template(None)
    argv = rendered_service(None)
    link, target = Path(argv[argv.index("--link") + 1]), argv[argv.index("--yaml") + 1]
    arrays = re.findall(r"^\s*\[\[nodearray (\S+)\]\]", template, re.M)
    made = re.findall(r"^ln -sfn (\S+) (\S+/topology\.yaml)$", template, re.M)
    assert len(arrays) == 4 and made == [(posixpath.relpath(target, link.parent), str(link))] * len(arrays)
    assert posixpath.normpath(posixpath.join(str(link.parent), made[0][0])) == target
    assert not re.findall(r"^ln -sfn \S+ \S+/topology\.yaml$", _cluster_template(BEFORE_YAML), re.M)


def as_test_cluster(argv: list[str], cluster: trixie_slurm.TrixieSlurm, link: bool = True) -> list[str]:
    """The rendered command's arguments with /sched/aitrain-prod the test cluster's folder and /etc/slurm its `etc`
    (where its slurm.conf links into the folder, as on a cyclecloud-slurm node); without --link when not `link`."""
    out = [
        arg.replace("/sched/aitrain-prod", str(cluster.folder)).replace("/etc/slurm", str(cluster.etc)) for arg in argv
    ]
    if not link and "--link" in out:
        at = out.index("--link")
        del out[at : at + 2]
    return out


def _run_service(
    cluster: trixie_slurm.TrixieSlurm, slurm_version: str | None = BEFORE_YAML, link: bool = True
) -> subprocess.CompletedProcess[str]:
    """The rendered command, with /sched/aitrain-prod pointing at the test cluster's folder and racks of RACK VMs."""
    argv = as_test_cluster(rendered_service(slurm_version)[1:], cluster, link)
    argv[argv.index("--block-size") + 1] = str(RACK)
    env = os.environ | {"HPCLZ_SLURM_BIN": str(cluster.folder / "bin")}
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, timeout=120, check=False)


def _shown_blocks(cluster: trixie_slurm.TrixieSlurm) -> dict[str, list[str]]:
    shown = cluster.scontrol("show", "topology")
    return {name: cluster.client.expand(nodes) for name, nodes in re.findall(r"BlockName=(\S+).*?Nodes=(\S+)", shown)}


def _topology_plugin(cluster: trixie_slurm.TrixieSlurm) -> str:
    found = re.search(r"^TopologyPlugin\s*=\s*(\S+)", cluster.scontrol("show", "config"), re.M)
    assert found is not None
    return found.group(1)


@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_the_scheduler_service_turns_block_topology_on_once_a_whole_rack_reports() -> None:
    trixie_slurm.require_trixie()
    others = {"h100": OTHER_NODES}
    with trixie_slurm.running(RACK_NODES + OTHER_NODES, "gb300", "", others, site_specific=True) as cluster:
        cluster.folder.joinpath("hpclz-fabric").mkdir()  # the unit's ExecStartPre
        before = _topology_plugin(cluster)
        assert before != "topology/block"
        assert cluster.client.blocks() == {}  # no racks for verify until the plugin is on

        # No node has reported: nothing is written and the plugin stays off, so slurmctld keeps scheduling.
        first = _run_service(cluster)
        assert first.returncode != 0 and "no full NVLink domain of 3 nodes reports yet" in first.stdout
        assert "TopologyPlugin" not in cluster.site_conf.read_text()

        # Three nodes report rack A, one rack B (a part rack), one nothing yet: one pass writes the rack's block and
        # a block for the other partition, turns the plugin on in site_specific.conf and reconfigures once.
        reports = cluster.folder / "hpclz-fabric"
        for node, rack in {"gb1": RACK_A, "gb2": RACK_A, "gb3": RACK_A, "gb4": RACK_B}.items():
            (reports / f"{node}.txt").write_text(gb_report(rack), encoding="utf-8")
        second = _run_service(cluster)
        assert second.returncode == 0, second.stdout + second.stderr
        assert second.stdout.endswith("rewritten, scontrol reconfigure run\n")
        site = cluster.site_conf.read_text()
        assert all(line in site.splitlines() for line in plugin_lines(["gb300"]))
        assert site.startswith("# site specific slurm configuration")  # what was there is kept
        cluster.wait_for(lambda: _topology_plugin(cluster) == "topology/block", "slurmctld back after reconfigure")
        blocks = _shown_blocks(cluster)
        assert sorted(blocks.values()) == [["gb1", "gb2", "gb3"], OTHER_NODES]
        assert cluster.client.blocks() == blocks  # what verify reads as racks (hpclz.verify.session)
        held = cluster.topology_conf.read_text()
        assert "# held out: gb4: part rack: 1 of 3 nodes" in held and "# held out: gb5: no fabric report yet" in held

        # Converged: the next tick changes nothing.
        third = _run_service(cluster)
        assert third.returncode == 0 and third.stdout.endswith("unchanged\n")

        # A node in no block gets no job, however small: why the other partition needs its block.
        with pytest.raises(SlurmError, match="Requested topology configuration is not available"):
            cluster.client.run("sbatch", "-p", "gb300", "-w", "gb5", "-N", "1", "-o", "/dev/null", "--wrap", "true")

        # A job larger than the racks that report is refused at submission, not queued: more racks must be powered
        # up whole first (cyclecloud-slurm's scale_m1 power_up --racks N).
        with pytest.raises(SlurmError, match="Requested node configuration is not available"):
            cluster.client.run("sbatch", "-p", "gb300", "-N", str(RACK + 1), "-o", "/dev/null", "--wrap", "true")

        # Both partitions schedule under the block plugin: a whole-rack job in the rack, a job on the other partition.
        for partition, count in (("gb300", RACK), ("h100", 1)):
            cluster.client.run(
                "sbatch", "--wait", "-p", partition, "-N", str(count), "-o", "/dev/null", "--wrap", "true"
            )
        ran = re.findall(r"NodeList=(\S+) NodeCnt=(\d+)", cluster.jobcomp.read_text(encoding="utf-8"))
        placed = [set(cluster.client.expand(nodes)) for nodes, _ in ran]
        assert {"gb1", "gb2", "gb3"} in placed and any(nodes <= set(OTHER_NODES) for nodes in placed)


@pytest.mark.slurm
@pytest.mark.timeout(120)
def test_strigger_has_no_power_event_so_a_timer_runs_the_generator() -> None:
    """Why the scheduler runs hpclz-topology from a timer: Slurm 24.11.5's strigger offers these node events and
    none for a node powering up or down (its --help, read here)."""
    trixie_slurm.require_trixie()
    with trixie_slurm.running(["gb1"], "gb300", "BlockName=b Nodes=gb1\nBlockSizes=1\n"):
        command = ["chroot", str(trixie_slurm.CHROOT), "env", f"SLURM_CONF={trixie_slurm.INSIDE}/slurm.conf"]
        done = subprocess.run([*command, "strigger", "--help"], capture_output=True, text=True, timeout=60, check=False)
    text = done.stdout + done.stderr
    events = set(re.findall(r"--(\w+)\s+trigger event when node", text))
    assert events == {"down", "drained", "draining", "fail", "idle", "resume", "up"}


def rendered_fabric_report() -> str:
    """hpclz-fabric-report as ai-training's gb300 node script writes it."""
    template = _artifacts("ai-training")["cyclecloud/slurm-cluster.txt"]
    return template.split("/opt/hpclz/bin/hpclz-fabric-report <<'HPCLZ_EOF'\n", 1)[1].split("\nHPCLZ_EOF", 1)[0] + "\n"


def _start_fabric_report(
    tmp_path: Path, host: str, reading_text: str, *, record_calls: bool
) -> tuple[subprocess.Popen[str], RenamedHost, Path, Path, Path]:
    """The rendered hpclz-fabric-report running in `tmp_path` under host name `host` (Slurm knows gb1 and gb2), with a
    `nvidia-smi` that prints `reading` (and notes each call in `calls` when asked). Returns the process, the host,
    the reports folder, the reading file and the calls file."""
    bin_dir, reports = tmp_path / "bin", tmp_path / "fabric"
    bin_dir.mkdir()
    reports.mkdir()
    renamed = RenamedHost(bin_dir, host, ["gb1", "gb2"])
    reading, calls = tmp_path / "reading.txt", tmp_path / "calls"
    reading.write_text(reading_text, encoding="utf-8")
    note = f'echo "$@" >>{calls}\n' if record_calls else ""
    fake = bin_dir / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\n{note}cat {reading}\n")
    fake.chmod(0o755)
    script = tmp_path / "hpclz-fabric-report"
    script.write_text(rendered_fabric_report(), encoding="utf-8")
    env = os.environ | {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.Popen(["bash", str(script), str(reports)], env=env, stdout=subprocess.PIPE, text=True)
    return proc, renamed, reports, reading, calls


@pytest.mark.timeout(120)
def test_a_node_reports_its_fabric_only_once_registration_has_ended(tmp_path: Path) -> None:
    """The node side, run as rendered: `nvidia-smi` here prints a GB-class node's `nvidia-smi -q` (the real H100
    capture with its Fabric fields set, tests/slurm/test_topology.py gb_report) and notes each call. While a GPU is
    In Progress nothing is written; once every GPU is Completed the report appears whole, under the host's name, which
    here is already its Slurm node name (tests/support/renamed_host.py)."""
    registering = gb_report(RACK_A, state="In Progress", status="N/A")
    proc, _, reports, reading, calls = _start_fabric_report(tmp_path, "gb1", registering, record_calls=True)
    try:
        while not calls.exists():  # the first reading was taken while a GPU was still registering
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        assert list(reports.iterdir()) == []
        done = gb_report(RACK_A)
        reading.write_text(done, encoding="utf-8")
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0 and out.strip() == f"hpclz-fabric-report: wrote {reports}/gb1.txt"
    assert [p.name for p in reports.iterdir()] == ["gb1.txt"]
    assert (reports / "gb1.txt").read_text(encoding="utf-8") == done.rstrip("\n") + "\n"
    assert node_domain((reports / "gb1.txt").read_text(encoding="utf-8")) == (f"{RACK_A[0]}_{RACK_A[1]}", "")


def test_the_report_units_do_not_hold_the_boot_while_they_wait() -> None:
    """Each report waits for as long as its host needs to take its Slurm name: a oneshot unit would hold
    multi-user.target (ordered after the units it wants, systemd.target(5), Default Dependencies) that long, a simple
    one counts as started once its script runs (systemd.service(5), Type=)."""
    template = _artifacts("ai-training")["cyclecloud/slurm-cluster.txt"]
    for name in ("hpclz-fabric-report", "hpclz-ib-report"):
        unit = template.split(f"/etc/systemd/system/{name}.service <<'HPCLZ_EOF'\n", 1)[1].split("\nHPCLZ_EOF", 1)[0]
        assert f"Type=simple\nExecStart=/opt/hpclz/bin/{name} " in unit


@pytest.mark.timeout(120)
def test_a_node_started_before_its_host_takes_its_slurm_name_reports_under_that_name(tmp_path: Path) -> None:
    """The report service starts from CloudInit, before cyclecloud-slurm renames the host to its Slurm node name
    (tests/support/renamed_host.py). While the host carries the VM's first name, which Slurm does not know, nothing is
    written, though the GPUs' fabric registration has ended; once the host is gb2 (an FQDN, as hostname may hold), the
    report lands as gb2.txt, the name the scheduler reads (hpclz.slurm.topology.current_domains)."""
    proc, host, reports, _, _ = _start_fabric_report(tmp_path, "vm4f2a0000001", gb_report(RACK_A), record_calls=False)
    try:
        while not host.calls():  # Slurm was asked about the pre-rename name
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        assert host.calls()[0] == "show node vm4f2a0000001"
        assert list(reports.iterdir()) == []
        host.rename("gb2.internal.cloudapp.net")
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0 and out.strip() == f"hpclz-fabric-report: wrote {reports}/gb2.txt"
    assert [p.name for p in reports.iterdir()] == ["gb2.txt"]
    assert host.calls()[-1] == "show node gb2"


@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_the_rendered_service_on_slurm_25_05_writes_topology_yaml_and_sets_the_rack_partition() -> None:
    """ai-training as rendered (Slurm 25.11.5) on a real slurmctld 26.05.5 (Debian sid): slurm.conf as
    cyclecloud-slurm writes it, partitions without `Topology=` and site_specific.conf included, no topology.yaml
    yet. The other partition is smaller than a rack, which kept topology.conf's cluster-wide plugin off; per-partition
    topologies leave it flat."""
    trixie_slurm.require_topology_yaml()
    others = {"h100": OTHER_NODES[:2]}
    nodes = RACK_NODES[:3] + OTHER_NODES[:2]
    with trixie_slurm.running(nodes, "gb300", "", others, site_specific=True, topology_yaml=("", {})) as cluster:
        assert not cluster.topology_yaml_path.exists()  # as before the first pass
        reports = cluster.folder / "hpclz-fabric"
        reports.mkdir()
        first = _run_service(cluster, None)
        assert first.returncode != 0 and "no full NVLink domain of 3 nodes reports yet" in first.stdout
        # No rack reports yet, so nothing is written, but the racks are out of auto-suspend from this first pass.
        assert not cluster.topology_yaml_path.exists() and "SuspendExcParts=gb300" in cluster.site_conf.read_text()
        cluster.wait_for(
            lambda: re.search(r"^SuspendExcParts\s*=\s*gb300$", cluster.scontrol("show", "config"), re.M) is not None,
            "slurmctld back with SuspendExcParts",
        )
        assert not (cluster.etc / "topology.yaml").is_symlink()  # nothing linked before there is a file

        for node in RACK_NODES[:3]:
            (reports / f"{node}.txt").write_text(gb_report(RACK_A), encoding="utf-8")
        # The rendered command less its --link: topology.yaml is written beside slurm.conf's target (/sched) only,
        # slurmctld 26.05.5 reads none after the reconfigure, and the partition cannot be given its topology.
        unlinked = _run_service(cluster, None, link=False)
        assert unlinked.returncode != 0 and cluster.topology_yaml_path.is_file()
        assert "Topology=nvlink failed: slurm_update error: Requested topology configuration is not available" in (
            unlinked.stdout
        )
        assert cluster.scontrol("show", "topology").strip() == ""
        # As rendered: /etc/slurm/topology.yaml links to it, and the same pass reconfigures.
        second = _run_service(cluster, None)
        assert second.returncode == 0 and second.stdout.endswith("changed\n"), second.stdout + second.stderr
        site = cluster.site_conf.read_text().splitlines()
        assert "SuspendExcParts=gb300" in site and "TopologyParam=BlockAsNodeRank" in site
        assert not any(line.startswith("TopologyPlugin") for line in site)
        assert "Topology=nvlink" in cluster.scontrol("show", "partition", "gb300")
        assert "Topology=" not in cluster.scontrol("show", "partition", "h100")
        assert sorted(cluster.client.blocks("nvlink").values()) == [RACK_NODES[:3]]
        assert (cluster.etc / "topology.yaml").resolve() == cluster.topology_yaml_path.resolve()
        third = _run_service(cluster, None)
        assert third.returncode == 0 and third.stdout.endswith("unchanged\n")

        for partition, count in (("gb300", RACK), ("h100", 2)):
            cluster.client.run(
                "sbatch", "--wait", "-p", partition, "-N", str(count), "-o", "/dev/null", "--wrap", "true"
            )
        ran = re.findall(r"Partition=(\S+) .*?NodeList=(\S+)", cluster.jobcomp.read_text(encoding="utf-8"))
        assert [(p, cluster.client.expand(n)) for p, n in ran] == [("gb300", RACK_NODES[:3]), ("h100", others["h100"])]


def rendered_unit(path: str, slurm_version: str | None = None) -> str:
    """The text of the unit file (or drop-in) at `path` that ai-training's scheduler script writes."""
    template = _cluster_template(slurm_version)
    return template.split(f"cat > {path} <<'HPCLZ_EOF'\n", 1)[1].split("HPCLZ_EOF", 1)[0]


DROP_IN = "/etc/systemd/system/slurmctld.service.d/hpclz-topology.conf"
CHECK = "/etc/systemd/system/hpclz-topology-check.service"


def _check_argv() -> list[str]:
    """What every start of slurmctld runs: the drop-in's ExecStartPost queues hpclz-topology-check.service, whose
    ExecStart this returns."""
    (post,) = [line for line in rendered_unit(DROP_IN).splitlines() if line.startswith("ExecStartPost=")]
    assert post == "ExecStartPost=-+/bin/systemctl start --no-block hpclz-topology-check.service"
    (line,) = [line for line in rendered_unit(CHECK).splitlines() if line.startswith("ExecStart=")]
    return shlex.split(line.removeprefix("ExecStart="))


def test_every_start_of_slurmctld_queues_the_light_check_and_a_timer_repeats_it() -> None:
    """cyclecloud-slurm's unit is slurmctld.service, with its own override.conf drop-in (Azure/cyclecloud-slurm@50e6739
    azure-slurm-install/install.py l.744-753): hpclz's drop-in has another name, so neither replaces the other."""
    template = _cluster_template(None)
    assert "cat > /etc/systemd/system/slurmctld.service.d/override.conf" not in template
    assert rendered_unit(DROP_IN).splitlines() == [
        "[Service]",
        "ExecStartPost=-+/bin/systemctl start --no-block hpclz-topology-check.service",
    ]
    argv = _check_argv()
    assert argv[:4] == ["/opt/hpclz/venv/bin/python", "-m", "hpclz.slurm.topology_yaml", "--reapply"]
    assert list(zip(argv[4::2], argv[5::2], strict=True)) == [
        ("--rack-partition", "gb300"),
        ("--tree-partition", "h100"),
        ("--tree-partition", "h200"),
        ("--yaml", "/sched/aitrain-prod/topology.yaml"),  # the full pass's --yaml
        ("--wait-s", "300"),
    ]
    check = rendered_unit(CHECK).splitlines()
    assert "After=hpclz-topology.service" in check and "Type=oneshot" in check
    timer = rendered_unit("/etc/systemd/system/hpclz-topology-check.timer").splitlines()
    assert {"OnUnitInactiveSec=15s", "AccuracySec=1s"} <= set(timer)
    assert "systemctl enable --now hpclz-topology-check.timer" in template
    # Before Slurm 25.05 the block plugin's lines live in site_specific.conf, which a restart reads again: no check.
    assert "hpclz-topology-check" not in _cluster_template(BEFORE_YAML) and DROP_IN not in _cluster_template(
        BEFORE_YAML
    )


def _run_check(cluster: trixie_slurm.TrixieSlurm) -> subprocess.CompletedProcess[str]:
    argv = as_test_cluster(_check_argv()[1:], cluster)
    env = os.environ | {"HPCLZ_SLURM_BIN": str(cluster.folder / "bin")}
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, timeout=400, check=False)


@pytest.mark.slurm
@pytest.mark.timeout(400)
def test_a_slurmctld_restart_or_reconfigure_gets_the_rack_partitions_topology_back_from_the_light_check() -> None:
    """ai-training as rendered on a real slurmctld 26.05.5: once the full pass has set gb300's Topology=nvlink, a
    restart (as `azslurm scale` runs one) and a reconfigure each drop it, back to slurm.conf's partition line without
    one. The drop-in's check, run at once after a restart, waits for slurmctld to answer and sets it again; after a
    reconfigure the timer's check does, without writing topology.yaml or reconfiguring."""
    trixie_slurm.require_topology_yaml()
    others = {"h100": OTHER_NODES[:2]}
    nodes = RACK_NODES[:3] + OTHER_NODES[:2]
    with trixie_slurm.running(nodes, "gb300", "", others, site_specific=True, topology_yaml=("", {})) as cluster:
        reports = cluster.folder / "hpclz-fabric"
        reports.mkdir()
        for node in RACK_NODES[:3]:
            (reports / f"{node}.txt").write_text(gb_report(RACK_A), encoding="utf-8")
        # Before the first full pass there is no topology.yaml: the check has nothing to set and changes nothing.
        early = _run_check(cluster)
        assert early.returncode == 0 and early.stdout == "partition topologies: unchanged\n", early.stdout
        assert cluster.live_partition_topology("gb300") == ""
        full = _run_service(cluster, None)
        assert full.returncode == 0 and full.stdout.endswith("changed\n"), full.stdout + full.stderr
        assert cluster.live_partition_topology("gb300") == "nvlink"
        written = cluster.topology_yaml_path.stat().st_mtime_ns

        # The window: after a restart the partition is flat (what the timer alone left for up to a minute).
        cluster.stop_slurmctld()
        cluster.start_slurmctld()
        cluster.wait_for(lambda: bool(cluster.client.run("sinfo", "-h")), "slurmctld back after the restart")
        assert cluster.live_partition_topology("gb300") == ""
        # A restart with the drop-in: its check starts as slurmctld starts, before it answers, and waits for it.
        cluster.stop_slurmctld()
        cluster.start_slurmctld()
        restarted = _run_check(cluster)
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        assert restarted.stdout == "Topology= set again on gb300\n"
        assert cluster.live_partition_topology("gb300") == "nvlink"
        assert cluster.live_partition_topology("h100") == ""  # no SHARP grouping here: the file names no tree
        assert sorted(cluster.client.blocks("nvlink").values()) == [RACK_NODES[:3]]

        cluster.client.run("scontrol", "reconfigure")
        cluster.wait_for(lambda: cluster.live_partition_topology("gb300") == "", "slurmctld back without Topology=")
        timed = _run_check(cluster)
        assert timed.returncode == 0 and timed.stdout == "Topology= set again on gb300\n", timed.stdout + timed.stderr
        assert cluster.live_partition_topology("gb300") == "nvlink"
        again = _run_check(cluster)
        assert again.returncode == 0 and again.stdout == "partition topologies: unchanged\n"
        assert cluster.topology_yaml_path.stat().st_mtime_ns == written  # the check never writes the file

        cluster.client.run("sbatch", "--wait", "-p", "gb300", "-N", str(RACK), "-o", "/dev/null", "--wrap", "true")
        ran = re.findall(r"Partition=(\S+) .*?NodeList=(\S+)", cluster.jobcomp.read_text(encoding="utf-8"))
        assert [(p, cluster.client.expand(n)) for p, n in ran] == [("gb300", RACK_NODES[:3])]
