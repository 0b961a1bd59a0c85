"""`hpclz verify` from the machine that deployed: the same verify, run on the Slurm scheduler VM.

The scheduler is found, and the envelope brought back, by hpclz.azure.scheduler. The script runs `python -m hpclz verify ... -o json` there through a managed Run Command; the JSON envelope comes
back whole through a blob (no 4 KiB limit), and this machine rebuilds the report from it, so the table, JUnit,
plot and exit code are those of a verify run on the scheduler.

The run works in a folder of its own under the cluster's shared folder (the nodes read the job scripts and write
their results there), removed when the script ends, and by a second Run Command when the first was stopped before
it could clean up (timed out, cancelled, or no longer followed). Its time limit is derived from what it will run.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from hpclz.azure.scheduler import (
    CONFIG_ENV,
    REPORT_CONTAINER,
    STARTUP_S,
    azure_clients,
    compute_group,
    locate_scheduler,
    parse_envelope,
    recorded_state,
    report_storage,
)
from hpclz.config.loader import LoadedConfig
from hpclz.errors import ExitCode, HpclzError
from hpclz.verify.dispatch import GRACE_S
from hpclz.verify.model import VerifyReport

REMOTE_CONFIG = "$workdir/lz.yaml"
# cyclecloud-slurm mounts the cluster's shared folder on every node at /shared (Azure/cyclecloud-slurm
# templates/slurm.txt, `[[[configuration cyclecloud.mounts.nfs_shared]]] mountpoint = /shared`); storage.shared
# may move it. The nodes must see the run's folder, so it lives there, never in the scheduler's /tmp.
DEFAULT_SHARED_MOUNT = "/shared"
REMOTE_ROOT = ".hpclz-verify"
# Time limits. Managed Run Commands default to 90 minutes and run for "hours/days" when timeoutInSeconds says so
# (https://learn.microsoft.com/azure/virtual-machines/linux/run-command-managed: "default timeout of 90 minutes",
# "Support for long running (hours/days) scripts"); neither that page nor the ComputeRP schema
# (VirtualMachineRunCommandProperties.timeoutInSeconds, azure-resource-manager-schemas 2024-07-01) documents a
# maximum. hpclz caps the limit at a day [proposal]: a verify that needs longer is stuck, not slow.
RUN_COMMAND_DEFAULT_S = 5400
RUN_COMMAND_CEILING_S = 24 * 3600
CLEANUP_TIMEOUT_S = 120
FINISHED_CLEAN = {"succeeded", "failed"}  # the script exited, so its EXIT trap removed the folder
BASTION_TYPE = "microsoft.network/bastionhosts"


@dataclass
class RemoteRequest:
    """What the remote verify needs besides the config."""

    verify_args: Sequence[str]  # passed through to `hpclz verify` on the scheduler
    python: str = "python3"  # on the scheduler, with hpclz installed
    scheduler: str | None = None  # a VM resource ID; found by tags when None
    report_account: str | None = None  # blob account URL for the output; the blob state's account when None
    timeout_s: int = RUN_COMMAND_DEFAULT_S  # the Run Command's timeoutInSeconds (hpclz.verify.session derives it)
    work_root: str | None = None  # the folder on the scheduler, shared with the nodes; default: shared_root()
    progress: Callable[[str], None] = lambda _line: None


@dataclass(frozen=True)
class Workload:
    """What the verify on the scheduler will run: each phase's worst case, as its own waits bound it."""

    node_budget_s: int  # each node's agent run (FanOut.node_budget_s)
    collective_budget_s: int  # each collective job (CollectivePlan.budget_s)
    queue_wait_s: int  # how long a job may wait for its nodes
    partition_nodes: Sequence[int]  # nodes in each partition verified (its max_nodes)
    nccl: bool


def time_limit_s(work: Workload) -> int:
    """Node checks run in every partition at once (one job per 100 nodes, all submitted together), so they end
    within one queue wait and one budget. With --nccl each partition then runs its ring pairs (exclusive jobs,
    which may queue behind each other: hpclz.verify.collective_job waits n budgets for them to start) and one
    all-node job, partition after partition. Bounded by RUN_COMMAND_CEILING_S."""
    total = STARTUP_S + work.queue_wait_s + work.node_budget_s + GRACE_S
    step = work.collective_budget_s + GRACE_S
    for nodes in work.partition_nodes if work.nccl else ():
        if nodes >= 2:
            pairs = 1 if nodes == 2 else nodes
            total += work.queue_wait_s + (pairs + 1) * step  # the ring pairs
            total += work.queue_wait_s + 2 * step  # the all-node all-reduce
    return min(total, RUN_COMMAND_CEILING_S)


def shared_root(loaded: LoadedConfig) -> str:
    """Where the scheduler keeps remote runs: under the folder every node mounts."""
    mount = getattr(loaded.config.storage.shared, "mount_point", None) or DEFAULT_SHARED_MOUNT
    return f"{mount.rstrip('/')}/{REMOTE_ROOT}"


@dataclass
class RemoteResult:
    report: VerifyReport
    work_dir: str | None
    scheduler: str


def remote_script(python: str, args: Sequence[str], work_dir: str) -> str:
    """The bash the Run Command runs: the config arrives base64-encoded in the environment, the envelope leaves
    on stdout (the output blob). hpclz's exit status is kept: the envelope decides, the status explains. The
    folder goes when the script exits, whatever its status (bash keeps the status through an EXIT trap)."""
    command = " ".join(shlex.quote(a) for a in [python, "-m", "hpclz", "verify"])
    rest = " ".join(shlex.quote(a) for a in args)
    return f"""#!/bin/bash
workdir={shlex.quote(work_dir)}
mkdir -p -m 700 "$workdir" || exit 73
trap 'rm -rf -- "$workdir"' EXIT
printf '%s' "${CONFIG_ENV}" | base64 -d >"{REMOTE_CONFIG}"
cd "$workdir" && {command} "{REMOTE_CONFIG}" {rest} --work-dir "$workdir/run" -o json
"""


def cleanup_script(work_dir: str) -> str:
    """What removes the folder when the verify's own script was stopped before its EXIT trap could."""
    return f"#!/bin/bash\nrm -rf -- {shlex.quote(work_dir)}\n"


def run_remote(loaded: LoadedConfig, request: RemoteRequest, compute_group: str | None) -> RemoteResult:
    from hpclz.azure.run_command import OutputBlobs, run_script

    clients = azure_clients(loaded)
    vm_id = locate_scheduler(clients, loaded, request.scheduler, compute_group)
    request.progress(f"verify runs on {vm_id} (time limit {request.timeout_s} s)")
    account, connection = report_storage(loaded, request.report_account)
    blobs = OutputBlobs(account, REPORT_CONTAINER, connection, clients.credential, valid_s=request.timeout_s)
    work_dir = f"{(request.work_root or shared_root(loaded)).rstrip('/')}/{blobs.prefix}"
    config_b64 = base64.b64encode(Path(loaded.file).read_bytes()).decode()
    outcome = None
    try:
        outcome = run_script(
            clients,
            vm_id,
            remote_script(request.python, request.verify_args, work_dir),
            blobs,
            env={CONFIG_ENV: config_b64},
            timeout_s=request.timeout_s,
            progress=request.progress,
        )
    finally:
        if outcome is None or outcome.state.lower() not in FINISHED_CLEAN:
            _clean_up(
                clients,
                vm_id,
                work_dir,
                OutputBlobs(account, REPORT_CONTAINER, connection, clients.credential),
                request,
            )
    if outcome.state.lower() == "timedout":
        raise HpclzError(
            f"verify on the scheduler did not finish within its time limit of {request.timeout_s} s",
            exit_code=ExitCode.AZURE_ERROR,
            hint="--time-limit SECONDS allows longer; fewer nodes (--partition, --nodes) need less time",
        )
    body = parse_envelope(outcome.stdout, outcome.stderr, outcome.state, outcome.exit_code)
    return RemoteResult(report=_report(body), work_dir=body.get("work_dir"), scheduler=vm_id)


def _clean_up(clients: Any, vm_id: str, work_dir: str, blobs: Any, request: RemoteRequest) -> None:
    """Best effort: a failed clean-up is said, never raised over the error that brought it here."""
    from hpclz.azure.run_command import run_script

    try:
        done = run_script(
            clients,
            vm_id,
            cleanup_script(work_dir),
            blobs,
            env={},
            timeout_s=CLEANUP_TIMEOUT_S,
            progress=request.progress,
        )
    except HpclzError as exc:
        request.progress(f"could not remove {work_dir} on the scheduler: {exc.message}")
        return
    if done.state.lower() == "succeeded":
        request.progress(f"removed {work_dir} on the scheduler")
    else:
        request.progress(f"could not remove {work_dir} on the scheduler (run command {done.state})")


def bastion_command(loaded: LoadedConfig, vm_id: str, bastion_id: str | None) -> str:
    """The `az network bastion ssh` line (native client: Standard SKU or higher; https://learn.microsoft.com/
    azure/bastion/connect-vm-native-client-linux) to open a shell on the scheduler; hpclz does not run it."""
    if bastion_id is None:
        raise HpclzError(
            "--via ssh: no Bastion host in the state (network.bastion.enabled false, or not deployed yet)",
            exit_code=ExitCode.USAGE,
            hint="use --via run-command, which needs no network path to the VM",
        )
    parts = bastion_id.strip("/").split("/")
    user = loaded.config.identity.admin_username
    return (
        f"az network bastion ssh --name {parts[-1]} --resource-group {parts[3]} --target-resource-id {vm_id} "
        f"--auth-type ssh-key --username {user} --ssh-key ~/.ssh/id_ed25519"
    )


def explain_ssh(loaded: LoadedConfig, scheduler: str | None, verify_args: Sequence[str]) -> NoReturn:
    """--via ssh: say exactly how to reach the scheduler through Bastion; hpclz does not open the tunnel itself."""
    doc = recorded_state(loaded)
    bastion = next((r.id for r in (doc.resources if doc else []) if r.type.lower() == BASTION_TYPE), None)
    clients = None if scheduler is not None else azure_clients(loaded)
    vm_id = locate_scheduler(clients, loaded, scheduler, None if scheduler is not None else compute_group(loaded))
    raise HpclzError(
        f"--via ssh is yours to run: {bastion_command(loaded, vm_id, bastion)}, then on the scheduler: "
        f"hpclz verify CONFIG {' '.join(verify_args)}",
        exit_code=ExitCode.USAGE,
    )


def _report(body: dict[str, Any]) -> VerifyReport:
    fields = {k: v for k, v in body.items() if k in VerifyReport.model_fields}
    try:
        return VerifyReport.model_validate(fields)
    except ValidationError as exc:
        raise HpclzError(f"verify on the scheduler returned a report hpclz cannot read: {exc.errors()[0]}") from None
