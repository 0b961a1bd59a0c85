"""`hpclz nodes roll|status` from the machine that deployed: the same command, run on the scheduler VM.

Reuses remote verify's parts (hpclz.azure.scheduler): the scheduler found by CycleCloud's tags in the compute
resource group the state recorded (or --scheduler), the config passed base64-encoded in a protected parameter, the
envelope brought back whole through a blob. A roll starts no job, so it needs no folder shared with the nodes: the
config goes to a temporary file that the script removes when it exits.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpclz.azure.scheduler import (
    CONFIG_ENV,
    REPORT_CONTAINER,
    STARTUP_S,
    azure_clients,
    compute_group,
    locate_scheduler,
    parse_envelope,
    report_storage,
)
from hpclz.config.loader import LoadedConfig
from hpclz.errors import ExitCode, HpclzError


@dataclass
class Scheduler:
    """Where and how the command runs there (the options `hpclz nodes` passes on)."""

    vm_id: str | None = None  # --scheduler; found by CycleCloud's tags when None
    report_account: str | None = None
    python: str = "python3"
    wait_s: int = 0
    progress: Callable[[str], None] = field(default=lambda _line: None)


def remote_script(python: str, args: list[str]) -> str:
    """The bash the Run Command runs; hpclz's envelope leaves on stdout, its exit status is kept."""
    command = " ".join(shlex.quote(a) for a in [python, "-m", "hpclz", "nodes", args[0]])
    rest = " ".join(shlex.quote(a) for a in args[1:])
    return f"""#!/bin/bash
config=$(mktemp --suffix=.yaml) || exit 73
trap 'rm -f -- "$config"' EXIT
printf '%s' "${CONFIG_ENV}" | base64 -d >"$config"
{command} "$config" {rest} -o json
"""


def run_on_scheduler(loaded: LoadedConfig, args: list[str], opts: Scheduler) -> dict[str, Any]:
    from hpclz.azure.run_command import OutputBlobs, run_script

    clients = azure_clients(loaded)
    vm_id = locate_scheduler(clients, loaded, opts.vm_id, None if opts.vm_id else compute_group(loaded))
    timeout_s = STARTUP_S + opts.wait_s  # a roll is a few scontrol calls; status --wait follows it that long
    opts.progress(f"nodes {args[0]} runs on {vm_id} (time limit {timeout_s} s)")
    account, connection = report_storage(loaded, opts.report_account)
    blobs = OutputBlobs(account, REPORT_CONTAINER, connection, clients.credential, valid_s=timeout_s)
    outcome = run_script(
        clients,
        vm_id,
        remote_script(opts.python, args),
        blobs,
        env={CONFIG_ENV: base64.b64encode(Path(loaded.file).read_bytes()).decode()},
        timeout_s=timeout_s,
        progress=opts.progress,
    )
    if outcome.state.lower() == "timedout":
        raise HpclzError(
            f"nodes {args[0]} on the scheduler did not finish within {timeout_s} s", exit_code=ExitCode.AZURE_ERROR
        )
    return parse_envelope(outcome.stdout, outcome.stderr, outcome.state, outcome.exit_code, what=f"nodes {args[0]}")
