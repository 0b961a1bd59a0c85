"""A localhost Slurm cluster whose slurmd runs hpclz's health gate as its Prolog (tests/support/slurm.py starts it).

Each node's verify agent reads `ROOT/nodes/<node>/` (falling back to the healthy H200 folder,
tests/verify/fixtures/README.md), so a test plants a fault by pointing a node's `fixtures.base` at a fault folder.
A slow or hung tool is planted as `ROOT/nodes/<node>/delay` (seconds): the agent sleeps that long before it reads
anything, like an nvidia-smi stuck in the driver. The prolog appends one line per run to `ROOT/gate/prolog.log`:
`node job started ended status`, the figures the benchmark reads.

Slurm facts this relies on (slurm.conf(5), 22.05): a Prolog that exits non-zero drains the node and requeues the
batch job, held unless SchedulerParameters has nohold_on_prolog_fail (set here, as the rendered cluster sets it);
PrologEpilogTimeout bounds it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from tests.support.remediation import GOOD

PROLOG_TIMEOUT_S = 30
REQUEUE_WAIT_S = 10
REPO = Path(__file__).resolve().parents[2]


@dataclass
class GateHooks:
    """Prolog settings for start_cluster (it takes any object with install() and lines(), as power saving is)."""

    nodes: list[str]
    budget_s: float = 5.0

    def install(self, root: Path) -> None:
        gate = root / "gate"
        gate.mkdir(mode=0o755)
        (root / "nodes").mkdir(mode=0o755)
        (root / "nodes" / "fixtures.base").write_text(str(GOOD))
        agent = gate / "slow_agent.sh"
        agent.write_text(
            "#!/bin/bash\n"
            f"delay_file={root / 'nodes'}/$SLURMD_NODENAME/delay\n"
            '[ -f "$delay_file" ] && sleep "$(cat "$delay_file")"\n'
            f'exec {sys.executable} -m hpclz.verify.agent --fixtures {root / "nodes"} "$@"\n'
        )
        agent.chmod(0o755)
        prolog = gate / "prolog.sh"
        prolog.write_text(
            "#!/bin/bash\n"
            f"export SLURM_CONF={root / 'slurm.conf'} PYTHONPATH={REPO}\n"
            "started=$(date +%s.%N)\n"
            f"{sys.executable} -m tests.support.slurm_gate {self.budget_s} {agent} >>{gate / 'prolog.out'} 2>&1\n"
            "status=$?\n"
            f'echo "$SLURMD_NODENAME $SLURM_JOB_ID $started $(date +%s.%N) $status" >>{gate / "prolog.log"}\n'
            "exit $status\n"
        )
        prolog.chmod(0o755)

    def lines(self, root: Path) -> list[str]:
        return [
            f"Prolog={root / 'gate' / 'prolog.sh'}",
            f"PrologEpilogTimeout={PROLOG_TIMEOUT_S}",
            # Requeue a job whose prolog failed without holding it, so it runs on another node (slurm.conf(5),
            # SchedulerParameters: nohold_on_prolog_fail, in 22.05.8's man page as shipped by Debian 12).
            "SchedulerParameters=nohold_on_prolog_fail",
            # A requeued job waits cred_expire before it may start again, 120 s by default (slurm.conf(5), AuthInfo:
            # "This also controls how long a requeued job must wait before starting again"); shortened for tests.
            f"AuthInfo=cred_expire={REQUEUE_WAIT_S}",
            f"PartitionName=debug Nodes={','.join(self.nodes)} Default=YES MaxTime=INFINITE State=UP",
        ]


def plant(root: Path, node: str, fault: Path | None = None, delay_s: float | None = None) -> None:
    folder = root / "nodes" / node
    folder.mkdir(exist_ok=True)
    base = folder / "fixtures.base"
    if fault is None:
        base.unlink(missing_ok=True)
    else:
        base.write_text(str(fault))
    delay = folder / "delay"
    if delay_s is None:
        delay.unlink(missing_ok=True)
    else:
        delay.write_text(f"{delay_s:g}")


class PrologRun(TypedDict):
    node: str
    job: str
    started: float
    ended: float
    status: int


def prolog_runs(root: Path) -> list[PrologRun]:
    path = root / "gate" / "prolog.log"
    if not path.exists():
        return []
    runs: list[PrologRun] = []
    for line in path.read_text().splitlines():
        node, job, started, ended, status = line.split()
        runs.append({"node": node, "job": job, "started": float(started), "ended": float(ended), "status": int(status)})
    return runs


def main() -> int:
    """The prolog's Python side: the real gate, with the agent behind the delay wrapper."""
    import os

    from hpclz.slurm.client import SlurmClient
    from hpclz.verify.gate import STARTED, Gate

    budget, agent = float(sys.argv[1]), sys.argv[2]
    gate = Gate("prolog", os.environ["SLURMD_NODENAME"], budget, [agent], SlurmClient())
    gate.slurm = SlurmClient(timeout_s=gate.drain_reserve_s / 2)
    status, line = gate.run(STARTED)
    print(json.dumps({"job": os.environ.get("SLURM_JOB_ID"), "status": status, "line": line}))
    return status


if __name__ == "__main__":
    sys.exit(main())
