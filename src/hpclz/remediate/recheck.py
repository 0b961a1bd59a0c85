"""The check after a repair: the verify agent's health tier, run as a Slurm job on the repaired node alone.

The node stays out of service while it is checked: a maintenance reservation on it (MAINT, IGNORE_JOBS) lets the
check's job in and keeps every other job off, the node is resumed inside it for the job, then drained again with
the repair's own reason, so only the remediator's next step decides whether it returns. This is the way
`hpclz verify` re-tests a drained node (hpclz.services.verify); the reservation behaviour is proved on the local
Slurm in tests/verify/test_slurm.py.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hpclz.remediate.engine import Verdict, verdict_of
from hpclz.slurm.client import REPAIR_PREFIX, SlurmClient, SlurmError
from hpclz.verify.dispatch import FanOut, NodeCode, fan_out

QUEUE_WAIT_S = 120
GRACE_S = 30


@dataclass(frozen=True)
class SlurmRecheck:
    client: SlurmClient
    command: Sequence[str]  # the agent command, with hpclz.verify.dispatch's {result} placeholder
    work_dir: Path
    budget_s: int = 300
    partition: str | None = None
    code: NodeCode | None = None  # how the node starts the agent, `command` then being its options (FanOut.code)

    def check(self, node: str) -> Verdict:
        found = self.client.nodes(nodelist=node)
        reason = found[0].reason if found and found[0].reason.startswith(REPAIR_PREFIX) else None
        name = f"hpclz-repair-{node}-{os.getpid()}-{int(time.time())}"
        minutes = -(-(self.budget_s + QUEUE_WAIT_S + GRACE_S) // 60) + 1
        self.client.reserve(name, [node], minutes=minutes)
        try:
            self.client.resume(node)
            plan = FanOut(
                command=self.command,
                work_dir=self.work_dir / name,
                node_budget_s=self.budget_s,
                queue_wait_s=QUEUE_WAIT_S,
                partition=self.partition,
                job_name="hpclz-repair-check",
                code=self.code,
            )
            report = fan_out(self.client, [node], plan, reservation=name)[node]
        finally:
            with contextlib.suppress(SlurmError):  # the check's own error, if any, is the one to report
                self.client.drain(node, reason or f"{REPAIR_PREFIX} check")
                self.client.unreserve(name)
        return verdict_of(report)
