"""Reaching the Slurm scheduler VM from the machine that deployed, through Azure Run Command.

The scheduler is a CycleCloud node, not a resource hpclz deployed, so it is found by the tags CycleCloud puts on
its VMs (hpclz.azure.run_command) in the compute resource group the state recorded, or named with --scheduler. A
command run there (`hpclz verify`, `hpclz nodes`) gets the config base64-encoded in a protected parameter and sends
its `-o json` envelope back whole through a blob (no 4 KiB limit); parse_envelope turns it into the result.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hpclz.azure.backends import open_backend
from hpclz.azure.blob_state import CONNECTION_STRING_ENV
from hpclz.config.loader import LoadedConfig
from hpclz.config.operations import AzureBlobState
from hpclz.errors import ExitCode, HpclzError
from hpclz.state.model import StateDocument

REPORT_CONTAINER = "hpclz-verify"
CONFIG_ENV = "HPCLZ_VERIFY_CONFIG_B64"  # a protected parameter: never echoed back by ARM
STARTUP_S = 300  # interpreter, config, sinfo, state and blob writes on the scheduler, before any job runs
# The head node's name in cyclecloud-slurm's cluster template (`[[node scheduler]]`, Azure/cyclecloud-slurm
# templates/slurm.txt), which CycleCloud writes into the VM's `Name` tag.
CYCLECLOUD_SCHEDULER = "scheduler"


def locate_scheduler(clients: Any, loaded: LoadedConfig, scheduler: str | None, compute_group: str | None) -> str:
    """--scheduler as given (checked to be a VM ID), else the VM CycleCloud tagged as the cluster's scheduler."""
    from hpclz.azure.run_command import find_scheduler, split_vm_id

    if scheduler is not None:
        split_vm_id(scheduler)
        return scheduler
    if compute_group is None:
        raise HpclzError(
            "no compute resource group in the state: deploy first, or name the VM with --scheduler",
            exit_code=ExitCode.USAGE,
        )
    return find_scheduler(clients, compute_group, cluster_name(loaded), CYCLECLOUD_SCHEDULER)


def azure_clients(loaded: LoadedConfig) -> Any:
    from hpclz.azure.clients import AzureClients, resolve_subscription
    from hpclz.azure.settings import settings_from_env

    meta = loaded.config.metadata
    return AzureClients(resolve_subscription(meta.resolved_subscription_id()), settings_from_env(meta.cloud))


def recorded_state(loaded: LoadedConfig) -> StateDocument | None:
    return open_backend(loaded.config, base_dir=Path(loaded.file).resolve().parent, config_file=loaded.file).read()


def compute_group(loaded: LoadedConfig) -> str | None:
    """The compute resource group the state recorded for the compute deployment."""
    doc = recorded_state(loaded)
    records = doc.deployments.values() if doc else []
    return next((r.resource_group for r in records if r.component == "compute" and r.resource_group), None)


def cluster_name(loaded: LoadedConfig) -> str:
    """The cluster's name in CycleCloud, as render gave it to the CycleCloud VM."""
    from hpclz.render.cloudinit import cluster_name as rendered
    from hpclz.render.zone import Zone

    return rendered(Zone(loaded.config))


def report_storage(loaded: LoadedConfig, report_account: str | None) -> tuple[str, str | None]:
    """The blob account the run's output goes to (--report-account, else the blob state's) and the connection
    string that overrides it (Azurite)."""
    connection = os.environ.get(CONNECTION_STRING_ENV)
    state = loaded.config.state
    account = report_account or (state.account_url if isinstance(state, AzureBlobState) else None)
    if account is None and connection is None:
        raise HpclzError(
            "verify on the scheduler needs a blob account for its report: the state is local",
            exit_code=ExitCode.USAGE,
            hint="pass --report-account https://ACCOUNT.blob.core.windows.net (the zone's storage account)",
        )
    return account or "", connection


def parse_envelope(stdout: str, stderr: str, state: str, exit_code: int | None, what: str = "verify") -> dict[str, Any]:
    """The remote run's `result`, or one error line saying what went wrong there (its own error line first).
    `what`: the hpclz command that ran there (verify, nodes roll), for the error line."""
    try:
        envelope = json.loads(stdout)
    except json.JSONDecodeError:
        tail = (stderr.strip().splitlines() or stdout.strip().splitlines() or [state])[-1]
        raise HpclzError(
            f"{what} on the scheduler returned no report (run command {state}, exit {exit_code}): {tail}",
            exit_code=ExitCode.AZURE_ERROR if exit_code is None else ExitCode.FAILED,
        ) from None
    if not isinstance(envelope, dict):
        raise HpclzError(f"{what} on the scheduler returned JSON that is not an hpclz envelope")
    if envelope.get("errors") and not envelope.get("result"):
        first = envelope["errors"][0]
        code = _exit_code(envelope.get("exit_code"))
        raise HpclzError(f"on the scheduler: {first.get('message', '?')}", exit_code=code)
    result = envelope.get("result")
    if not isinstance(result, dict):
        raise HpclzError(f"{what} on the scheduler returned an envelope without a result")
    return result


def _exit_code(value: Any) -> ExitCode:
    try:
        return ExitCode(int(value))
    except (TypeError, ValueError):
        return ExitCode.FAILED
