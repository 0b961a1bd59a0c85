"""A real Slurm 24.11 cluster with the `topology/block` plugin, run from a Debian trixie chroot on loopback.

Debian 12's slurm-wlm is 22.05, and its topology plugins are tree and 3d_torus; `topology/block` arrived in Slurm
23.11. Debian trixie ships slurm-wlm 24.11 (24.11.5 when this was written), so `scripts/install-test-deps`
debootstraps a minimal trixie with slurmctld, slurmd, the Slurm clients and munge into `.tools/trixie` (about
2.5 minutes and 285 MB, measured here). Every daemon and client runs inside it (22.05's clients cannot talk to a
24.11 controller), each in a private mount namespace (`unshare -m`) with /proc and /sys mounted for it, so nothing
stays mounted when it exits.

Facts this harness relies on, each seen here with 24.11.5:
- slurmd initialises the cgroup plugin even with `ProctrackType=proctrack/linuxproc` and fails without a cgroup
  file system ("cgroup filesystem not mounted in /sys/fs/cgroup/"); cgroup.conf `CgroupPlugin=disabled` turns it
  off;
- the chroot needs an /etc/hosts naming localhost, and `SlurmctldHost=localhost(127.0.0.1)`;
- a node powered up stays POWERING_UP (`idle#`) until a slurmd reports a boot after the power-up request; a slurmd
  restarted here (host uptime, or a time namespace whose boot clock starts at the restart) did not bring a node of
  the 36-node cluster back to `idle` within 2 minutes after a `scontrol reconfigure`, so the power-up test judges
  the topology while the nodes are powering up and schedules no job on them;
- `jobcomp/filetxt` writes one line per finished job with its `NodeList`: the record the placement test reads.

The files sit as cyclecloud-slurm lays them out: written in the cluster's folder (its /sched/<cluster>), and every
daemon and client given `etc/slurm.conf` (its /etc/slurm/slurm.conf), a link into that folder, beside links to
cgroup.conf and topology.conf (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.648-701). Slurm reads
the other files beside the path it is given, not beside the link's target (src/common/read_config.c
get_extra_conf_path), so topology.yaml is read only where a link to it is made in `etc` (hpclz.slurm.topology_yaml).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ParamSpec

from hpclz.slurm.client import SlurmClient
from hpclz.slurm.topology_yaml import link_yaml
from tests.conftest import REPO, require
from tests.support.local_http import free_ports

CHROOT = REPO / ".tools" / "trixie"
# Slurm 25.05+ for topology.yaml: Debian unstable (slurm-wlm 26.05.5 when this was written), also built by
# scripts/install-test-deps. HPCLZ_SID_CHROOT names another copy (a worktree that builds its own while developing).
SID = Path(os.environ.get("HPCLZ_SID_CHROOT") or REPO / ".tools" / "sid")
# The cluster's folder as the daemons see it: one per test process, so parallel test workers (pytest-xdist) and other
# checkouts' runs never share a state folder, and teardown kills only the strays of its own process's clusters.
INSIDE = f"/hpclz-test-{os.getpid()}"
MARKER = "HPCLZ_TEST_TRIXIE_SLURM"  # its value is INSIDE, in every daemon's environment
CLIENTS = ("scontrol", "sinfo", "sbatch", "squeue", "scancel", "srun")
START_TIMEOUT_S = 60.0
P = ParamSpec("P")


def trixie_available(chroot: Path = CHROOT) -> bool:
    return all((chroot / "usr" / "sbin" / d).exists() for d in ("slurmctld", "slurmd", "munged")) and all(
        (chroot / "usr" / "bin" / c).exists() for c in CLIENTS
    )


def require_trixie() -> None:
    require(
        trixie_available() and os.geteuid() == 0 and shutil.which("unshare") is not None,
        "Slurm 24.11 in a Debian trixie chroot (.tools/trixie from scripts/install-test-deps; root, unshare)",
    )


def version(chroot: Path) -> tuple[int, int]:
    """(major, minor) of the chroot's slurmctld: `slurmctld -V` prints "slurm-wlm 26.05.5" on Debian sid."""
    out = subprocess.run(
        ["chroot", str(chroot), "/usr/sbin/slurmctld", "-V"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    major, minor = out.split()[-1].split(".")[:2]
    return int(major), int(minor)


def require_topology_yaml() -> None:
    """Slurm 25.05 or later, which reads topology.yaml (several topologies, one per partition)."""
    require(
        trixie_available(SID) and os.geteuid() == 0 and shutil.which("unshare") is not None,
        "Slurm 26.05 in a Debian sid chroot (.tools/sid from scripts/install-test-deps; root, unshare)",
    )
    require(version(SID) >= (25, 5), f"Slurm 25.05+ in the chroot at {SID} (topology.yaml)")


@dataclass
class TrixieSlurm:
    nodes: list[str]
    partition: str
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # Other partitions and their nodes (each also in `nodes`); `partition` holds the rest.
    others: dict[str, list[str]] = field(default_factory=dict)
    # True: the block plugin is not in slurm.conf, which includes site_specific.conf instead, as cyclecloud-slurm's
    # does (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/templates/slurm.conf.template l.77).
    site_specific: bool = False
    # Slurm 25.05+: topology.yaml's text, and each partition's `Topology=` (slurm.conf(5)); no TopologyPlugin line then.
    topology_yaml: str | None = None
    partition_topology: dict[str, str] = field(default_factory=dict)
    chroot: Path = CHROOT
    # CPUs per node: jobs of one CPU per node share a node up to this many at once.
    cpus: int = 1
    # Link etc/topology.yaml to the folder's before slurmctld starts, as the scheduler's hpclz-topology pass does.
    yaml_link: bool = True
    # ResumeProgram: /bin/true, or a script noting each power-up request in `resumed`.
    note_resume: bool = False
    # A Prolog's shell script (run by slurmd as root inside the chroot, at allocation as cyclecloud-slurm's
    # PrologFlags=Alloc asks), or none.
    prolog: str | None = None

    @property
    def folder(self) -> Path:
        return self.chroot / INSIDE.lstrip("/")

    @property
    def etc(self) -> Path:
        """The /etc/slurm-like folder: slurm.conf here is a link into `folder`."""
        return self.folder / "etc"

    @property
    def resumed(self) -> Path:
        """Each ResumeProgram call's node list, one a line (`note_resume`)."""
        return self.folder / "log" / "resumed.txt"

    @property
    def topology_conf(self) -> Path:
        return self.folder / "topology.conf"

    @property
    def topology_yaml_path(self) -> Path:
        return self.folder / "topology.yaml"

    @property
    def site_conf(self) -> Path:
        return self.folder / "site_specific.conf"

    @property
    def jobcomp(self) -> Path:
        return self.folder / "log" / "jobcomp.txt"

    @property
    def client(self) -> SlurmClient:
        """hpclz's own Slurm adapter, pointed at wrappers that run each client inside the chroot."""
        return SlurmClient(bin_dir=self.folder / "bin", timeout_s=60.0)

    def scontrol(self, *args: str) -> str:
        return self.client.run("scontrol", *args)

    def live_partition_topology(self, partition: str) -> str:
        """The partition's `Topology=` as `scontrol show partition` prints it; empty when it names none."""
        found = re.search(r"\bTopology=(\S*)", self.scontrol("show", "partition", partition))
        return found.group(1) if found else ""

    def start_slurmd(self, node: str) -> None:
        (self.folder / "spool" / node).mkdir(parents=True, exist_ok=True)
        self._spawn(f"slurmd-{node}", ["/usr/sbin/slurmd", "-D", "-N", node, "-f", f"{INSIDE}/etc/slurm.conf"])

    def stop_slurmd(self, node: str) -> None:
        proc = self.processes.pop(f"slurmd-{node}")
        proc.terminate()
        proc.wait(timeout=15)

    def stop_slurmctld(self) -> None:
        """Stop slurmctld as `systemctl stop` would (SIGTERM); start_slurmctld starts it again, reading slurm.conf
        anew: a restart, as `azslurm scale` runs one (`systemctl restart slurmctld`)."""
        proc = self.processes.pop("slurmctld")
        proc.terminate()
        proc.wait(timeout=30)

    def start_slurmctld(self) -> None:
        """Start slurmctld without waiting for it to answer."""
        self._spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", f"{INSIDE}/etc/slurm.conf"])

    def _spawn(self, name: str, argv: list[str]) -> None:
        mounts = f"mount -t proc proc {self.chroot}/proc && mount -t sysfs sysfs {self.chroot}/sys"
        script = f'{mounts} && exec chroot {self.chroot} "$@"'
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", MARKER: INSIDE, "SLURM_CONF": f"{INSIDE}/etc/slurm.conf"}
        out = (self.folder / "log" / f"{name}.out").open("wb")
        self.processes[name] = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script, name, *argv],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_for(self, ready: Callable[[], bool], what: str, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                if ready():
                    return
            dead = [name for name, p in self.processes.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{what}: {dead} exited early; logs in {self.folder / 'log'}")
            time.sleep(0.2)
        raise TimeoutError(f"{what} not ready after {timeout_s:.0f} s; logs in {self.folder / 'log'}")

    def idle(self, nodes: list[str]) -> bool:
        states = {n.name: n for n in self.client.nodes()}
        return all(states[n].base.startswith("idle") and not states[n].flags for n in nodes)


def write_config(cluster: TrixieSlurm, topology: str) -> None:
    folder = cluster.folder
    ctld_port, *ports = free_ports(1 + len(cluster.nodes))
    elsewhere = {n for nodes in cluster.others.values() for n in nodes}
    own = [n for n in cluster.nodes if n not in elsewhere]
    lines = [
        "ClusterName=hpclzblock",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={INSIDE}/munge/munge.socket.2",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "SchedulerType=sched/backfill",
        "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0",
        "MinJobAge=2",
        # As cyclecloud-slurm's scale_m1 section asks for GB200/GB300 (Azure/cyclecloud-slurm@50e6739 README.md
        # l.377-378): block topology, with node ranks following the blocks; or, as its installer does, an included
        # site_specific.conf where those lines go later.
        *(
            [f"Include {INSIDE}/site_specific.conf"]
            if cluster.site_specific
            else []
            if cluster.topology_yaml is not None
            else ["TopologyPlugin=topology/block", "TopologyParam=BlockAsNodeRank"]
        ),
        # Power saving as CycleCloud configures it, with programs that only return: the test stops and starts
        # slurmd itself (a VM deallocated, then allocated again). SuspendTime is long so nothing powers down alone.
        "SuspendProgram=/bin/true",
        f"ResumeProgram={INSIDE}/bin/resume" if cluster.note_resume else "ResumeProgram=/bin/true",
        "SuspendTime=3600",
        "SuspendTimeout=5",
        "ResumeTimeout=120",
        "SlurmctldParameters=idle_on_node_suspend,power_save_interval=1,power_save_min_interval=0",
        # More CPUs than this machine has: "any node with less than the configured resources will not be set to
        # INVAL/INVALID_REG" (slurm.conf(5) of 24.11, SlurmdParameters=config_overrides); without it no slurmd of a
        # 4-CPU node came up on this 2-core machine within a minute.
        *(["SlurmdParameters=config_overrides"] if cluster.cpus > 1 else []),
        *([f"Prolog={INSIDE}/bin/prolog", "PrologFlags=Alloc"] if cluster.prolog is not None else []),
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={INSIDE}/log/jobcomp.txt",
        f"StateSaveLocation={INSIDE}/state",
        f"SlurmdSpoolDir={INSIDE}/spool/%n",
        f"SlurmctldPidFile={INSIDE}/run/slurmctld.pid",
        f"SlurmdPidFile={INSIDE}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={INSIDE}/log/slurmctld.log",
        f"SlurmdLogFile={INSIDE}/log/slurmd-%n.log",
        *(
            f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={p} CPUs={cluster.cpus} State=UNKNOWN"
            for n, p in zip(cluster.nodes, ports, strict=True)
        ),
        f"PartitionName={cluster.partition} Nodes={','.join(own)} Default=YES MaxTime=INFINITE State=UP"
        + _topology(cluster, cluster.partition),
        *(
            f"PartitionName={name} Nodes={','.join(n)} MaxTime=INFINITE State=UP" + _topology(cluster, name)
            for name, n in cluster.others.items()
        ),
        "",
    ]
    (folder / "slurm.conf").write_text("\n".join(lines))
    (folder / "cgroup.conf").write_text("CgroupPlugin=disabled\n")
    cluster.topology_conf.write_text(topology)
    if cluster.topology_yaml:  # empty: none yet, as before the scheduler's first pass
        cluster.topology_yaml_path.write_text(cluster.topology_yaml)
    if cluster.site_specific:
        cluster.site_conf.write_text("# site specific slurm configuration. This is preserved during upgrades\n")
    cluster.etc.mkdir()
    for name in ("slurm.conf", "cgroup.conf", "topology.conf"):
        (cluster.etc / name).symlink_to(f"../{name}")
    if cluster.topology_yaml and cluster.yaml_link:
        link_yaml(cluster.etc / "topology.yaml", cluster.topology_yaml_path)
    if cluster.note_resume:
        resume = folder / "bin" / "resume"
        resume.write_text(f'#!/bin/sh\necho "$1" >>{INSIDE}/log/resumed.txt\n')
        resume.chmod(0o755)
    if cluster.prolog is not None:
        prolog = folder / "bin" / "prolog"
        prolog.write_text(cluster.prolog)
        prolog.chmod(0o755)
    for tool in CLIENTS:
        wrapper = folder / "bin" / tool
        wrapper.write_text(
            f'#!/bin/sh\nexec chroot {cluster.chroot} env SLURM_CONF={INSIDE}/etc/slurm.conf /usr/bin/{tool} "$@"\n'
        )
        wrapper.chmod(0o755)


def _topology(cluster: TrixieSlurm, partition: str) -> str:
    name = cluster.partition_topology.get(partition)
    return f" Topology={name}" if name else ""


def start(
    nodes: list[str],
    partition: str,
    topology: str,
    others: dict[str, list[str]] | None = None,
    site_specific: bool = False,
    topology_yaml: tuple[str, dict[str, str]] | None = None,
    cpus: int = 1,
    yaml_link: bool = True,
    note_resume: bool = False,
    prolog: str | None = None,
) -> TrixieSlurm:
    """`topology_yaml`: (topology.yaml's text, each partition's topology name): Slurm 25.05+, the sid chroot; its
    text, when there is one, is linked beside etc/slurm.conf unless `yaml_link` is False."""
    cluster = TrixieSlurm(
        nodes=nodes,
        partition=partition,
        others=others or {},
        site_specific=site_specific,
        cpus=cpus,
        yaml_link=yaml_link,
        note_resume=note_resume,
        prolog=prolog,
    )
    if topology_yaml is not None:
        cluster.topology_yaml, cluster.partition_topology = topology_yaml[0], dict(topology_yaml[1])
        cluster.chroot = SID
    shutil.rmtree(cluster.folder, ignore_errors=True)
    for sub in ("munge", "state", "spool", "run", "log", "bin"):
        (cluster.folder / sub).mkdir(parents=True, mode=0o755)
    cluster.folder.chmod(0o755)  # munged refuses a socket folder others cannot traverse
    hosts = cluster.chroot / "etc" / "hosts"
    if not hosts.exists():
        hosts.write_text("127.0.0.1\tlocalhost\n")
    key = cluster.folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o400)
    write_config(cluster, topology)
    m = f"{INSIDE}/munge"
    try:
        cluster._spawn(
            "munged",
            [
                "/usr/sbin/munged", "-F", "--force", f"--socket={m}/munge.socket.2", f"--key-file={m}/munge.key",
                f"--pid-file={m}/munged.pid", f"--log-file={INSIDE}/log/munged.log", f"--seed-file={m}/munged.seed",
            ],
        )  # fmt: skip
        cluster.wait_for(lambda: (cluster.folder / "munge" / "munge.socket.2").exists(), "munged")
        cluster.start_slurmctld()
        cluster.wait_for(lambda: bool(cluster.client.run("sinfo", "-h")), "slurmctld")
        for node in nodes:
            cluster.start_slurmd(node)
        cluster.wait_for(lambda: cluster.idle(nodes), "slurmd on every node")
    except BaseException:
        stop(cluster)
        raise
    return cluster


def stop(cluster: TrixieSlurm) -> None:
    for proc in cluster.processes.values():
        if proc.poll() is None:
            proc.terminate()
    for proc in cluster.processes.values():
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    # slurmstepd and batch scripts detach from slurmd; they carry the marker in their environment.
    for pid in _marked():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(cluster.folder, ignore_errors=True)


def _marked() -> list[int]:
    needle = f"{MARKER}={INSIDE}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
    return pids


def _stopped_after(begin: Callable[P, TrixieSlurm]) -> Callable[P, contextlib.AbstractContextManager[TrixieSlurm]]:
    """`begin`, taking the same arguments, as a `with` block: the cluster it starts is stopped however the block ends."""

    @contextlib.contextmanager
    def block(*args: P.args, **kwargs: P.kwargs) -> Iterator[TrixieSlurm]:
        cluster = begin(*args, **kwargs)
        try:
            yield cluster
        finally:
            stop(cluster)

    return block


running = _stopped_after(start)
