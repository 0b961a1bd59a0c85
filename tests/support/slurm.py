"""A real Slurm cluster on localhost for tests: munged, slurmctld and one slurmd per simulated node.

Everything lives in one private folder (config, munge key and socket, state, spool, logs, pids) and on
free ports, so two test sessions on one machine do not meet. Facts and pitfalls this relies on:
docs/local-services.md (Slurm section).

Use the session fixture `slurm_cluster` (import it into a test module). The cluster is started once per
test process however many modules import the fixture, and torn down at the end, strays included.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pytest

from tests.conftest import require
from tests.support.local_http import free_ports


class ClusterHooks(Protocol):
    """What start_cluster installs beside the daemons and adds to slurm.conf: power saving (slurm_power.PowerSaving)
    or a prolog gate (slurm_gate.GateHooks)."""

    def install(self, root: Path) -> None: ...

    def lines(self, root: Path) -> list[str]: ...


DAEMONS = ("munged", "slurmctld", "slurmd")
SCHEDULER_PARAMETERS = "SchedulerParameters="
AUTH_INFO = "AuthInfo="


def _values(lines: list[str], key: str) -> list[str]:
    return [line.removeprefix(key) for line in lines if line.startswith(key)]


MARKER = "HPCLZ_TEST_SLURM_HARNESS"  # set in every daemon's environment, so teardown finds its own strays
START_TIMEOUT_S = 30.0
ROOT_PREFIX = "hpclz-slurm-"
MUNGE_SOCKET = Path("munge", "munge.socket.2")  # under the cluster's root


def slurm_available() -> bool:
    return all(Path(_binary(d)).exists() for d in DAEMONS) and shutil.which("sinfo") is not None


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


@dataclass
class LocalSlurm:
    """A running localhost cluster. `env` is what every client command needs (SLURM_CONF)."""

    root: Path
    nodes: list[str]
    partition: str = "debug"
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.root / MUNGE_SOCKET

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, **self.job_env}

    @property
    def job_env(self) -> dict[str, str]:
        """What a test puts in its own environment so hpclz's Slurm calls, and the jobs, find this cluster."""
        # The marker rides into jobs too (sbatch exports the caller's environment), so teardown finds tasks.
        return {"SLURM_CONF": str(self.conf), MARKER: str(self.root)}

    def client(self, *args: str, timeout: float = 15.0) -> str:
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def node_states(self) -> dict[str, str]:
        out = self.client("sinfo", "-h", "-N", "-o", "%N %T")
        return dict(line.split(maxsplit=1) for line in out.splitlines() if line.strip())

    def wait_idle(self, nodes: list[str] | None = None, timeout: float = START_TIMEOUT_S) -> None:
        wanted = nodes or self.nodes
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            try:
                states = self.node_states()
            except (RuntimeError, subprocess.TimeoutExpired):
                states = {}
            if all(states.get(n) == "idle" for n in wanted):
                return
            time.sleep(0.2)
        raise TimeoutError(f"nodes not idle after {timeout:.0f} s: {states}; logs in {self.root / 'log'}")

    def reset_nodes(self) -> None:
        """Undo what a test did to node states (drain, reservations), so tests stay independent."""
        for line in self.client("scontrol", "show", "reservation", "-o").splitlines():
            if line.startswith("ReservationName="):
                name = line.split()[0].split("=", 1)[1]
                self.client("scontrol", "delete", f"ReservationName={name}")
        for node, state in self.node_states().items():
            if state.startswith(("drain", "down")):
                self.client("scontrol", "update", f"NodeName={node}", "State=RESUME")
        self.wait_idle()


def write_config(
    root: Path,
    nodes: list[str],
    ctld_port: int,
    node_ports: list[int],
    power: ClusterHooks | None = None,
) -> Path:
    host = socket.gethostname()
    node_lines = [
        f"NodeName={n} NodeHostname={host} NodeAddr=127.0.0.1 Port={p} CPUs=1 State=UNKNOWN"
        for n, p in zip(nodes, node_ports, strict=True)
    ]
    extra = power.lines(root) if power else _partitions(nodes)
    # slurm.conf keeps the last of a repeated key, so a hook's SchedulerParameters and AuthInfo join the harness's.
    scheduler = ["batch_sched_delay=0", "sched_min_interval=0", *_values(extra, SCHEDULER_PARAMETERS)]
    auth = [f"socket={root / MUNGE_SOCKET}", *_values(extra, AUTH_INFO)]
    extra = [line for line in extra if not line.startswith((SCHEDULER_PARAMETERS, AUTH_INFO))]
    conf = root / "slurm.conf"
    conf.write_text(
        "\n".join(
            [
                "ClusterName=hpclztest",
                "SlurmctldHost=localhost",
                f"SlurmctldPort={ctld_port}",
                "SlurmUser=root",
                "SlurmdUser=root",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                AUTH_INFO + ",".join(auth),
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core",
                "ReturnToService=2",
                "MpiDefault=none",
                "AccountingStorageType=accounting_storage/none",
                "JobAcctGatherType=jobacct_gather/none",
                "JobCompType=jobcomp/none",
                "SchedulerType=sched/backfill",
                # Stock Slurm waits ~2.5 s between a submit and the allocation; tests run many short jobs in a row.
                SCHEDULER_PARAMETERS + ",".join(scheduler),
                "KillWait=2",
                "MinJobAge=60",
                "InactiveLimit=0",
                f"StateSaveLocation={root / 'state'}",
                f"SlurmdSpoolDir={root / 'spool'}/%n",
                f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}",
                f"SlurmdPidFile={root / 'run'}/slurmd-%n.pid",
                f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
                f"SlurmdLogFile={root / 'log'}/slurmd-%n.log",
                *node_lines,
                *extra,
                "",
            ]
        )
    )
    return conf


def _partitions(nodes: list[str]) -> list[str]:
    return [
        f"PartitionName=debug Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP",
        # Not the default: proves hpclz names the partition in every job it submits.
        f"PartitionName=gpu Nodes={','.join(nodes)} Default=NO MaxTime=INFINITE State=UP",
    ]


def start_cluster(nodes: list[str], power: ClusterHooks | None = None) -> LocalSlurm:
    """A fresh cluster on free loopback ports. The ports are free when chosen, but another test process (a
    pytest-xdist worker) may bind one before the daemon does; that daemon then cannot listen and its node never
    answers, so a start whose nodes do not come up is tried again, twice, on new ports."""
    for attempt in range(3):
        try:
            return _start_cluster_once(nodes, power)
        except (TimeoutError, RuntimeError):
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_cluster_once(nodes: list[str], power: ClusterHooks | None) -> LocalSlurm:
    reap_orphans()
    root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX))
    (root / "owner.pid").write_text(str(os.getpid()))
    root.chmod(0o755)  # munged refuses a socket folder others cannot traverse
    for sub in ("munge", "state", "spool", "run", "log"):
        (root / sub).mkdir(mode=0o755)
    cluster = LocalSlurm(root=root, nodes=nodes)
    ctld_port, *node_ports = free_ports(1 + len(nodes))
    if power is not None:
        power.install(root)
    write_config(root, nodes, ctld_port, node_ports, power)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o400)
    daemon_env = cluster.env
    try:
        cluster.processes.append(_spawn(cluster, "munged", _munged_args(root), daemon_env))
        _wait_for(lambda: cluster.munge_socket.exists(), "munged socket", cluster)
        cluster.processes.append(
            _spawn(cluster, "slurmctld", [_binary("slurmctld"), "-D", "-i", "-f", str(cluster.conf)], daemon_env)
        )
        _wait_for(lambda: _answers(cluster), "slurmctld", cluster)
        for n in nodes:
            (root / "spool" / n).mkdir(mode=0o755)
            args = [_binary("slurmd"), "-D", "-N", n, "-f", str(cluster.conf)]
            cluster.processes.append(_spawn(cluster, f"slurmd-{n}-stdout", args, daemon_env))
        cluster.wait_idle()
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def _munged_args(root: Path) -> list[str]:
    m = root / "munge"
    return [
        _binary("munged"),
        "-F",
        "--force",  # we run as root in a private folder; munged would otherwise refuse
        f"--socket={root / MUNGE_SOCKET}",
        f"--key-file={m / 'munge.key'}",
        f"--pid-file={m / 'munged.pid'}",
        f"--log-file={root / 'log' / 'munged.log'}",
        f"--seed-file={m / 'munged.seed'}",
    ]


def _spawn(cluster: LocalSlurm, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    out = (cluster.root / "log" / f"{name}.out").open("wb")
    return subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _answers(cluster: LocalSlurm) -> bool:
    try:
        cluster.client("sinfo", "-h", timeout=5)
    except (RuntimeError, subprocess.TimeoutExpired):
        return False
    return True


def _wait_for(ready: Callable[[], bool], what: str, cluster: LocalSlurm) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if ready():
            return
        dead = [p.args for p in cluster.processes if p.poll() is not None]
        if dead:
            raise RuntimeError(f"{what}: a daemon exited early: {dead}; logs in {cluster.root / 'log'}")
        time.sleep(0.1)
    raise TimeoutError(f"{what} not ready after {START_TIMEOUT_S:.0f} s; logs in {cluster.root / 'log'}")


def _argv(proc: subprocess.Popen[bytes]) -> list[str]:
    """A daemon's command line: _spawn always starts one from a list of strings."""
    args = proc.args
    return [str(a) for a in args] if isinstance(args, list) else [str(args)]


def vanish(cluster: LocalSlurm, node: str) -> None:
    """Kill a node's slurmd at once, as when its VM is deleted behind Slurm's back."""
    [proc] = [p for p in cluster.processes if _argv(p)[:1] == [_binary("slurmd")] and node in _argv(p)]
    proc.kill()
    proc.wait(timeout=10)
    cluster.processes.remove(proc)


def restart_controller(cluster: LocalSlurm) -> None:
    """Stop slurmctld (it saves its state on SIGTERM) and start a new one from that state, as a new scheduler VM
    starts from StateSaveLocation on a shared /sched. Daemons already gone (a suspend program stops slurmd) are
    forgotten first, so the wait does not take them for a failed start."""
    [ctld] = [p for p in cluster.processes if _argv(p)[:1] == [_binary("slurmctld")]]
    ctld.terminate()
    ctld.wait(timeout=30)
    cluster.processes[:] = [p for p in cluster.processes if p is not ctld and p.poll() is None]
    args = [_binary("slurmctld"), "-D", "-f", str(cluster.conf)]
    cluster.processes.append(_spawn(cluster, "slurmctld-again", args, cluster.env))
    _wait_for(lambda: _answers(cluster), "slurmctld", cluster)


def stop_cluster(cluster: LocalSlurm) -> None:
    """Stop our daemons, then any process still carrying our marker (slurmstepd and job tasks detach)."""
    for proc in reversed(cluster.processes):
        if proc.poll() is None:
            proc.terminate()
    for proc in cluster.processes:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    _kill_marked_and_remove(cluster.root)


def reap_orphans() -> None:
    """Stop clusters whose test process died without tearing them down (killed, or out of memory)."""
    for root in Path(tempfile.gettempdir()).glob(f"{ROOT_PREFIX}*"):
        try:
            owner = int((root / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        if not Path("/proc", str(owner)).exists():
            _kill_marked_and_remove(root)


def _kill_marked_and_remove(root: Path) -> None:
    for pid in _marked_pids(str(root)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(root, ignore_errors=True)


def _marked_pids(root: str) -> list[int]:
    needle = f"{MARKER}={root}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            pids.append(int(entry.name))
    return pids


class _Shared:
    """One cluster per test process, however many modules import the fixture."""

    cluster: LocalSlurm | None = None
    users = 0


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[LocalSlurm]:
    require(slurm_available(), "Slurm (slurmctld, slurmd, munged, sinfo)")
    if _Shared.cluster is None:
        _Shared.cluster = start_cluster(["node1", "node2", "node3", "node4"])
    _Shared.users += 1
    try:
        yield _Shared.cluster
    finally:
        _Shared.users -= 1
        if _Shared.users == 0:
            stop_cluster(_Shared.cluster)
            _Shared.cluster = None


@pytest.fixture
def clean_slurm(slurm_cluster: LocalSlurm) -> Iterator[LocalSlurm]:
    """The shared cluster with every node idle and no reservation, before and after the test."""
    slurm_cluster.reset_nodes()
    yield slurm_cluster
    slurm_cluster.reset_nodes()
