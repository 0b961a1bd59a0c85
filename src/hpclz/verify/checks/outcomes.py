"""Outcomes the head node observes itself (HPCLZ-VFY-900..999): a node that left no result, could not be
reached, was not tested, a job that never ran, a slow interconnect found by ring pairs.

They are not functions of one node's readings, so they are not node checks (hpclz.verify.checks.core), but
they are results hpclz reports, drains for and prints in JUnit: OUTCOMES gives each one its ID, title,
severity, fix and documentation once, for the dispatcher (hpclz.verify.dispatch, hpclz.verify.collective_job)
to put in its results and for hpclz.verify.checks.rules to register as rules. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OutcomeSpec:
    id: str
    title: str
    fix: str
    doc: str
    severity: str = "error"  # the worst a finding from it can be


OUTCOMES: list[OutcomeSpec] = []


def outcome(id: str, title: str, fix: str, doc: str, *, severity: str = "error") -> OutcomeSpec:
    spec = OutcomeSpec(id, title, fix, " ".join(doc.split()), severity)
    OUTCOMES.append(spec)
    return spec


def by_id(outcome_id: str) -> OutcomeSpec:
    return next(spec for spec in OUTCOMES if spec.id == outcome_id)


NO_RESULT = outcome(
    "HPCLZ-VFY-900",
    "Node returned a readable report",
    "Read the node's <node>.stderr in the work folder; a hang or crash of the agent itself is a node fault, "
    "else raise --budget when the node is only slow.",
    """The node command ran but hpclz got no report from it: it timed out (exit 124), was killed (137, often
    out of memory), printed no valid NodeReport JSON, or its job overran the budget and was cancelled. A node
    that cannot answer a few seconds of checks is not fit for jobs, so it is drained like a failing check
    (aznhc's distributed runner reports such hosts as "No results reported").""",
)
UNREACHABLE = outcome(
    "HPCLZ-VFY-901",
    "Node reachable through Slurm",
    "Check slurmd and munge on the node (systemctl status slurmd), its network, and whether Azure deallocated "
    "the VM; `scontrol update nodename=<node> state=resume` once it answers.",
    """Slurm reports the node DOWN, or not answering its pings (state ending in `*`) even after the few seconds
    slurmctld needs after a resume. Nothing can be tested on it, and jobs cannot run on it either.""",
)
NOT_TESTED = outcome(
    "HPCLZ-VFY-902",
    "Node available for testing",
    "Test it later, when its jobs end; a node drained by an operator keeps its drain (pass --drain to re-test "
    "nodes hpclz drained itself).",
    """The node was skipped: busy with user jobs (one busy node would hold a whole job of up to 100 nodes in
    the queue), or drained by someone other than hpclz. It is reported as not measured, never as a failure:
    hpclz has no evidence about it.""",
    severity="warning",
)
JOB_NOT_RUN = outcome(
    "HPCLZ-VFY-903",
    "Verify job started on the node",
    "Make --work-dir a folder every node shares (NFS, Lustre), and check the partition's queue; the node is "
    "not drained for this.",
    """The Slurm job never ran the node command: it waited for its nodes past the queue budget, or it ran
    but left no output at all in the work folder, which means the folder is not shared with the nodes. It is a
    fault of the set-up, not of the node, so hpclz reports it and fails the run but never drains for it.""",
)
SLOW_PAIR = outcome(
    "HPCLZ-VFY-910",
    "Inter-node all-reduce (ring pairs)",
    "Check the node's InfiniBand ports (HPCLZ-VFY-011, ibstat), cables and the HCAs' firmware; if every rail is "
    "ACTIVE at full rate, report the node to Azure with the pair figures.",
    """Two-node all-reduce over ring pairs (node i with i+1, as Azure's NDv4 ring-pairs harness does), so each
    node sits in two pairs. A pair fails below the SKU's inter-node bus bandwidth threshold
    (internode_allreduce_busbw_gbps, e.g. 350 GB/s on 8 x NDR 400G) or, where no threshold applies (gloo over
    TCP, unknown SKU), below half the best pair's. A node is blamed only when every pair it sits in failed, so
    one bad node does not convict its healthy neighbours.""",
)
