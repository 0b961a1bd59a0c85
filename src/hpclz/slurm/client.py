"""A small adapter over Slurm's client commands (sbatch, squeue, scontrol, sinfo, scancel).

Only this module runs Slurm binaries. Where they live (`bin_dir`, else HPCLZ_SLURM_BIN, else PATH) and which
slurm.conf they read (`conf`, else `--slurm-conf`, else SLURM_CONF) are settings, so tests point it at the
localhost cluster of tests/support/slurm.py and production at the cluster's own.
Every call has a timeout: a hung controller must not hang `hpclz verify`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hpclz.errors import ExitCode, HpclzError

DRAIN_PREFIX = "hpclz:"
# A node hpclz marked for power down (hpclz.slurm.power): drained too, but never to be resumed by verify.
ROLL_PREFIX = "hpclz: roll"
# A node hpclz.remediate holds for repair (or retired): drained too, but only remediation may resume it.
REPAIR_PREFIX = "hpclz: repair"
# Slurm keeps a node's reason in a fixed-size field in some tools' output; long reasons get cut.
MAX_REASON_CHARS = 200
FINISHED_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
    }
)


class SlurmError(HpclzError):
    """Slurm refused or failed a command: the message names the command and Slurm's own words."""

    exit_code = ExitCode.FAILED


@dataclass(frozen=True)
class NodeInfo:
    name: str
    state: str  # sinfo's long state: idle, mixed, allocated, drained, draining, down*, ...
    reason: str = ""
    partitions: tuple[str, ...] = ()

    @property
    def drained_by_hpclz(self) -> bool:
        """Drained by verify or the Scheduled Events watcher, so verify may re-test and resume it. Not a node on its
        way to power down (`!` or `%`, whoever drained it: a roll's drain, or a watcher's drain on top of one),
        nor one a roll marked: resuming those would cancel the roll; nor one remediation holds for repair."""
        if set(self.flags) & set("!%") or self.reason.startswith((ROLL_PREFIX, REPAIR_PREFIX)):
            return False
        return self.state.startswith("drain") and self.reason.startswith(DRAIN_PREFIX)

    @property
    def flags(self) -> str:
        """The state's trailing flag characters (sinfo(1) NODE STATE CODES, SchedMD/slurm doc/man/man1/sinfo.1):
        * not responding, ~ powered off, # powering up, ! pending power down, % powering down,
        $ maintenance reservation, @ pending reboot, ^ reboot issued, - planned by the backfill scheduler."""
        return self.state[len(self.state.rstrip(STATE_FLAGS)) :]

    @property
    def base(self) -> str:
        return self.state.rstrip(STATE_FLAGS).lower()

    @property
    def unreachable(self) -> bool:
        # A trailing * means slurmctld lost contact; down nodes cannot run a job whatever the reason.
        return "*" in self.flags or self.base.startswith(("down", "fail", "future", "unk", "inval"))

    @property
    def busy(self) -> bool:
        # A node planned by backfill ("-") is held for a higher-priority job, as good as allocated.
        return self.base.startswith(("alloc", "mix", "comp", "planned")) or "-" in self.flags

    @property
    def schedulable(self) -> bool:
        """Idle and powered: a powered-off, powering, rebooting or maintenance-reserved node would hold the
        verify job until it came up (or never run it), so it is reported as not tested instead."""
        if self.unreachable or set(self.flags) & set("~#!%$@^"):
            return False
        return not self.base.startswith(NOT_SCHEDULABLE)


# What a Slurm client prints with neither a slurm.conf nor a DNS SRV record to find slurmctld by (captured from
# Debian's slurm-wlm 22.05.8 here: "sinfo: fatal: Could not establish a configuration source").
NO_CONFIG = "Could not establish a configuration source"
STATE_FLAGS = "*~#!%$@^-"
# sinfo %T long state names of nodes that cannot take a new job now (same man page, NODE STATE CODES).
NOT_SCHEDULABLE = (
    "drain", "maint", "reserved", "resv", "power", "reboot", "npc", "perfctrs",
)  # fmt: skip


def slurm_here(conf: Path | None = None) -> bool:
    """Can this machine talk to a Slurm: a slurm.conf named, or Slurm's tools found. Where not (the machine that
    ran `hpclz deploy`), verify and the node roll go to the scheduler VM through Azure Run Command."""
    if conf or os.environ.get("SLURM_CONF") or os.environ.get("HPCLZ_SLURM_BIN"):
        return True
    return shutil.which("sinfo") is not None


@dataclass(frozen=True)
class SlurmClient:
    """Runs Slurm's client tools. `bin_dir` None means PATH; `conf` None means the caller's SLURM_CONF."""

    bin_dir: Path | None = None
    conf: Path | None = None
    timeout_s: float = 30.0
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, conf: str | Path | None = None, bin_dir: str | Path | None = None) -> SlurmClient:
        conf = conf or os.environ.get("SLURM_CONF")
        bin_dir = bin_dir or os.environ.get("HPCLZ_SLURM_BIN")
        client = cls(bin_dir=Path(bin_dir) if bin_dir else None, conf=Path(conf) if conf else None)
        if client.conf is not None and not client.conf.is_file():
            raise SlurmError(
                f"slurm.conf not found: {client.conf} (from --slurm-conf or SLURM_CONF)", exit_code=ExitCode.USAGE
            )
        client.binary("sinfo")
        return client

    @property
    def env(self) -> dict[str, str]:
        env = {**os.environ, **self.extra_env}
        if self.conf is not None:
            env["SLURM_CONF"] = str(self.conf)
        return env

    def binary(self, tool: str) -> str:
        if self.bin_dir is not None:
            path = self.bin_dir / tool
            if not path.exists():
                raise SlurmError(f"Slurm's {tool} not found in {self.bin_dir}")
            return str(path)
        found = shutil.which(tool)
        if found is None:
            raise SlurmError(f"Slurm's {tool} is not on PATH", hint="install the Slurm client or set HPCLZ_SLURM_BIN")
        return found

    def run(self, tool: str, *args: str, timeout: float | None = None) -> str:
        done = self._exec(tool, args, self.env, timeout)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            last = said[-1] if said else f"exit {done.returncode}"
            if NO_CONFIG in last:
                raise SlurmError(
                    f"this machine has no Slurm configuration ({last}): run hpclz where Slurm's commands "
                    "reach the cluster (its scheduler or a login node), or name a slurm.conf with --slurm-conf",
                    exit_code=ExitCode.USAGE,
                )
            raise SlurmError(f"{tool} {' '.join(args[:3])} failed: {last}")
        return done.stdout

    def _exec(
        self, tool: str, args: Sequence[str], env: dict[str, str], timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        cmd = [self.binary(tool), *args]
        try:
            return subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=timeout or self.timeout_s, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise SlurmError(f"{tool} did not answer within {exc.timeout:.0f} s: {' '.join(cmd)}") from None

    # -- nodes ---------------------------------------------------------------------------------------------

    def nodes(self, partition: str | None = None, nodelist: str | None = None) -> list[NodeInfo]:
        args = ["-h", "-N", "-o", "%N|%T|%P|%E"]
        if partition:
            args += ["-p", partition]
        if nodelist:
            args += ["-n", nodelist]
        merged: dict[str, NodeInfo] = {}
        for line in self.run("sinfo", *args).splitlines():
            if not line.strip():
                continue
            name, state, part, reason = line.split("|", 3)
            reason = "" if reason == "none" else reason
            seen = merged.get(name)
            parts = (*seen.partitions, part.rstrip("*")) if seen else (part.rstrip("*"),)
            merged[name] = NodeInfo(name=name, state=state, reason=reason, partitions=parts)
        return list(merged.values())

    def blocks(self, topology: str | None = None) -> dict[str, list[str]]:
        """Block name -> its nodes, from `scontrol show topology` under topology/block (a line per block,
        "BlockName=<name> ... Nodes=<hostlist>", as slurmctld 24.11 and 26.05 print it: tests/slurm/
        test_topology_wiring.py, test_topology_yaml.py); empty under any other topology plugin. `topology`: a
        topology of topology.yaml by name (Slurm 25.05+; with none named scontrol shows the cluster default, scontrol(1)
        of 26.05: "show topology [topology_name]")."""
        shown = self.run("scontrol", "show", "topology", *([topology] if topology else []))
        found = re.findall(r"^BlockName=(\S+)\s.*?\bNodes=(\S+)", shown, re.M)
        return {name: self.expand(nodes) for name, nodes in found}

    def expand(self, hostlist: str) -> list[str]:
        """node[1-3],gpu7 -> names, by Slurm's own parser."""
        return [h for h in self.run("scontrol", "show", "hostnames", hostlist).split() if h]

    def hostlist(self, names: Sequence[str]) -> str:
        """names -> node[1-3],gpu7, by Slurm's own formatter: one short argument however many nodes."""
        return self.run("scontrol", "show", "hostlist", ",".join(names)).strip()

    def drain(self, node: str, reason: str) -> None:
        reason = reason if reason.startswith(DRAIN_PREFIX) else f"{DRAIN_PREFIX} {reason}"
        self.run("scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={_one_line(reason)}")

    def resume(self, node: str) -> None:
        self.run("scontrol", "update", f"NodeName={node}", "State=RESUME")

    # -- reservations: how a node drained by hpclz can run its re-test without taking user jobs ------------

    def reserve(self, name: str, nodes: Sequence[str], minutes: int) -> None:
        self.run(
            "scontrol",
            "create",
            "reservation",
            f"ReservationName={name}",
            f"Nodes={','.join(nodes)}",
            "StartTime=now",
            f"Duration={max(1, minutes)}",
            "Users=root" if os.geteuid() == 0 else f"Users={os.environ.get('USER', 'root')}",
            "Flags=MAINT,IGNORE_JOBS",
        )

    def unreserve(self, name: str) -> None:
        self.run("scontrol", "delete", f"ReservationName={name}")

    # -- jobs ----------------------------------------------------------------------------------------------

    def sbatch(
        self,
        script: Path,
        *,
        nodes: Sequence[str],
        job_name: str,
        time_limit_s: int,
        output: Path,
        partition: str | None = None,
        reservation: str | None = None,
        exclusive: bool = False,
        env: dict[str, str] | None = None,
        ntasks_per_node: int = 1,
        dependency: str | None = None,
    ) -> str:
        args = [
            "--parsable",
            f"--job-name={job_name}",
            f"--nodes={len(nodes)}",
            f"--nodelist={','.join(nodes)}",
            f"--ntasks-per-node={ntasks_per_node}",
            f"--time={_minutes(time_limit_s)}",
            f"--output={output}",
            "--export=ALL",
        ]
        if partition:
            args.append(f"--partition={partition}")
        if reservation:
            args.append(f"--reservation={reservation}")
        if exclusive:
            args.append("--exclusive")
        if dependency:
            args.append(f"--dependency={dependency}")  # e.g. afterok:<job id> (sbatch(1), --dependency)
        done = self._exec("sbatch", [*args, str(script)], {**self.env, **(env or {})})
        if done.returncode != 0:
            raise SlurmError(f"sbatch refused job {job_name} on {','.join(nodes)}: {done.stderr.strip()}")
        return done.stdout.strip().split(";")[0]

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        """Job id -> state; a job squeue no longer knows is reported as COMPLETED (it is gone)."""
        if not job_ids:
            return {}
        try:
            out = self.run("squeue", "-h", "-t", "all", "-j", ",".join(job_ids), "-o", "%i|%T")
        except SlurmError as exc:
            # squeue refuses a list in which no job is known any more (all purged after MinJobAge).
            if "Invalid job id" not in str(exc):
                raise
            out = ""
        states = dict(line.split("|", 1) for line in out.splitlines() if "|" in line)
        return {j: states.get(j, "COMPLETED") for j in job_ids}

    def cancel(self, job_ids: Sequence[str]) -> None:
        if job_ids:
            self.run("scancel", *job_ids)


def _minutes(seconds: int) -> str:
    """sbatch --time as minutes:seconds, which Slurm reads exactly."""
    return f"{seconds // 60}:{seconds % 60:02d}"


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_REASON_CHARS else flat[: MAX_REASON_CHARS - 3] + "..."
