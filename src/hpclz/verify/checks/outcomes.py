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
# How a node says it has none of the ways to start hpclz (hpclz.verify.dispatch.NodeCode): the start of its one line.
NO_AGENT_LINE = "hpclz's node code is not on "
NO_AGENT = outcome(
    "HPCLZ-VFY-904",
    "hpclz's node code present on the node",
    "Wait for the scheduler's hpclz-gate-install (systemctl status hpclz-gate-install.timer there) to put the node "
    "bundle under /sched/<cluster>/hpclz, or pass --bundle where it is, or --python an interpreter with hpclz that "
    "every node has; the node is not drained for this.",
    """The node had none of the ways verify starts hpclz there: python3 with the single-file node bundle the
    scheduler installs under /sched/<cluster>/hpclz (hpclz-node.pyz, written by hpclz-gate-install once
    cyclecloud-slurm has made /sched), or the interpreter given with --python. Nothing ran, so nothing is known of
    the node's devices: as the health gate holds, a failed tool is not a failed device. hpclz reports it and fails
    the run, but never drains for it.""",
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

# The training proof (hpclz verify --workload, hpclz.verify.workload): results of Slurm jobs the head node reads.
WORKLOAD_CHAIN = outcome(
    "HPCLZ-VFY-950",
    "Training proof job chain completed",
    "Read the failed step's log in the work folder: an image import that fails names the registry or the digest, "
    "a preprocessing failure names the input; rerun with --workload once it is fixed.",
    """The proof runs as one Slurm job chain (set-up, data preparation, preprocessing, then the training runs),
    each step starting only after the one before it succeeded (sbatch --dependency=afterok). A step that failed
    or was cancelled stops the chain: the container stack, the shared folder or the data path is broken, which
    is exactly what the proof exists to find before researchers do.""",
)
WORKLOAD_LOSS = outcome(
    "HPCLZ-VFY-951",
    "Training loss decreases",
    "A run with no iteration lines never started training: read its log (NCCL, container, data path). A loss "
    "that does not fall, or NaN iterations, on a sound data set point at the GPUs' numerics: rerun the node "
    "checks with --nccl on the run's nodes.",
    """A real training step is the only test that exercises the whole stack at once. The median lm loss over
    the last quarter of the run must be below the median over the first quarter, and no iteration may be NaN
    or skipped (Megatron-LM counts both in its log line). A run that logged no iteration fails here too.""",
)
WORKLOAD_THROUGHPUT = outcome(
    "HPCLZ-VFY-952",
    "Training throughput per node",
    "Run hpclz verify --nccl on the named node; if its GEMM and all-reduce pass, compare its GPU clocks and "
    "PCIe links (HPCLZ-VFY-025) with a healthy node's.",
    """Each node trains the same small GPT alone. Its tokens per second per GPU and model FLOPs utilisation
    (model FLOPs of an iteration, Narayanan et al. 2021 equation 3, over the GPUs' dense BF16 peak) must reach
    the GPU's floor where one is known, and at least 85 % of the median of its peers: a node that trains slowly
    is named like a node that fails a health check.""",
)
WORKLOAD_SCALING = outcome(
    "HPCLZ-VFY-953",
    "Training weak scaling across nodes",
    "Check that NCCL runs over InfiniBand inside the container (NCCL_DEBUG=INFO shows NET/IB), that the "
    "topology file is mounted, and run the ring-pair all-reduce (--nccl) on the same nodes.",
    """The same model trained data parallel on all the chosen nodes, with the per-GPU batch kept constant, must
    keep at least 80 % of the single-node tokens per second per GPU. The gradient all-reduce of a model this
    small is a small fraction of a step at the fabric's rated bandwidth, so a larger loss is rank placement,
    NCCL falling back to TCP, or one slow node holding the others back.""",
)
