"""`hpclz nodes roll|status|repair|incidents`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from hpclz.cli.common import OUTPUT_OPTION, OutputFormat, finish, guarded


class Via(StrEnum):
    slurm = "slurm"
    run_command = "run-command"


CONFIG_ARGUMENT = typer.Argument(..., metavar="CONFIG", help="Landing-zone config (YAML): its compute.partitions.")
PARTITION_OPTION = typer.Option(
    [], "--partition", "-p", metavar="NAME", help="A partition of the config (repeatable; status: default all of them)."
)
NODES_OPTION = typer.Option(
    None, "--nodes", "-w", metavar="HOSTLIST", help="Only these nodes of those partitions, a Slurm hostlist."
)
SLURM_CONF_OPTION = typer.Option(None, "--slurm-conf", metavar="FILE", help="slurm.conf to use (default: $SLURM_CONF).")
VIA_OPTION = typer.Option(
    None,
    "--via",
    help="slurm: through this machine's Slurm. run-command: on the scheduler VM through Azure Run Command "
    "(the default where this machine has no Slurm).",
)
SCHEDULER_OPTION = typer.Option(
    None, "--scheduler", metavar="VM_RESOURCE_ID", help="The scheduler VM (default: the one CycleCloud tagged)."
)
REPORT_ACCOUNT_OPTION = typer.Option(
    None, "--report-account", metavar="URL", help="Blob account the scheduler writes its output to (default: state's)."
)
PYTHON_OPTION = typer.Option(
    None,
    "--python",
    metavar="PATH",
    help="With --via run-command: the scheduler's Python that has hpclz (default: /opt/hpclz/venv/bin/python).",
)


@dataclass(frozen=True)
class _Reach:
    """Where both commands find Slurm: here (slurm.conf) or on the scheduler VM through Run Command."""

    slurm_conf: Path | None
    via: Via | None
    scheduler: str | None
    report_account: str | None
    python: str | None

    def options(self) -> dict[str, Any]:
        # Left out, the scheduler's own hpclz (hpclz.slurm.route.SCHEDULER_PYTHON) is NodesOptions' default.
        return {
            **({"remote_python": self.python} if self.python else {}),
            "slurm_conf": self.slurm_conf,
            "via": self.via.value if self.via else None,
            "scheduler": self.scheduler,
            "report_account": self.report_account,
            "progress": lambda line: typer.echo(line, err=True),
        }


def roll(
    config: Path = CONFIG_ARGUMENT,
    partition: list[str] = PARTITION_OPTION,
    nodes: str | None = NODES_OPTION,
    why: str | None = typer.Option(
        None,
        "--why",
        metavar="TEXT",
        help="Said after 'hpclz: roll: ' in Slurm's reason (default: new node definition).",
    ),
    all_partitions: bool = typer.Option(
        False, "--all", help="Every partition of the config (roll needs --partition, --nodes or this)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check and show what would be marked; change nothing."),
    slurm_conf: Path | None = SLURM_CONF_OPTION,
    via: Via | None = VIA_OPTION,
    scheduler: str | None = SCHEDULER_OPTION,
    report_account: str | None = REPORT_ACCOUNT_OPTION,
    python: str | None = PYTHON_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Mark nodes POWER_DOWN_ASAP: drained now, powered down (and rebuilt by CycleCloud) once their jobs end."""
    with guarded("nodes roll", output):
        from hpclz.cli.views import nodes as view
        from hpclz.services.nodes import NodesOptions
        from hpclz.services.nodes import roll as run_roll

        reach = _Reach(slurm_conf, via, scheduler, report_account, python)
        options = NodesOptions(
            config,
            tuple(partition),
            all_partitions=all_partitions,
            nodes=nodes,
            why=why,
            dry_run=dry_run,
            **reach.options(),
        )
        finish(run_roll(options), output, view.show)


def status(
    config: Path = CONFIG_ARGUMENT,
    partition: list[str] = PARTITION_OPTION,
    nodes: str | None = NODES_OPTION,
    wait: int = typer.Option(
        0,
        "--wait",
        min=0,
        max=86400,
        metavar="SECONDS",
        help="Follow the roll until every node is powered down, at most this long (exit 1 if some are not).",
    ),
    slurm_conf: Path | None = SLURM_CONF_OPTION,
    via: Via | None = VIA_OPTION,
    scheduler: str | None = SCHEDULER_OPTION,
    report_account: str | None = REPORT_ACCOUNT_OPTION,
    python: str | None = PYTHON_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Where each node is in a roll: waiting for its jobs, power down pending, powering down, powered down, up."""
    with guarded("nodes status", output):
        from hpclz.cli.views import nodes as view
        from hpclz.services.nodes import NodesOptions
        from hpclz.services.nodes import status as run_status

        reach = _Reach(slurm_conf, via, scheduler, report_account, python)
        options = NodesOptions(config, tuple(partition), nodes=nodes, wait_s=wait, **reach.options())
        finish(run_status(options), output, view.show)


STATE_DIR_OPTION = typer.Option(
    ..., "--state-dir", metavar="DIR", help="Where remediation keeps state.json and events.jsonl (one per cluster)."
)


def repair(
    config: Path = CONFIG_ARGUMENT,
    state_dir: Path = STATE_DIR_OPTION,
    spool: Path | None = typer.Option(
        None, "--spool", metavar="DIR", help="Where the health gate leaves failing reports (its --spool)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what the next step of each incident would be."),
    max_out: float = typer.Option(
        10.0, "--max-out", min=0.0, max=100.0, metavar="PERCENT", help="Most of a partition held out for repair."
    ),
    strikes: int = typer.Option(
        3, "--strikes", min=1, metavar="N", help="Incidents in 7 days after which a node is reported."
    ),
    check_budget: int = typer.Option(300, "--check-budget", min=10, metavar="SECONDS", help="Post-repair check."),
    resource_group: str | None = typer.Option(
        None, "--resource-group", metavar="NAME", help="The nodes' resource group (default: the state's compute one)."
    ),
    slurm_conf: Path | None = SLURM_CONF_OPTION,
    python: str | None = typer.Option(
        None,
        "--python",
        metavar="PATH",
        help="A Python with hpclz that every node has, for the post-repair check (default: python3 with the node "
        "bundle under /sched/<cluster>/hpclz).",
    ),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """One pass of closed-loop repair: drain, reboot or reimage, report to Azure, return or retire."""
    with guarded("nodes repair", output):
        from hpclz.cli.views import repair as view
        from hpclz.services.repair import RepairOptions
        from hpclz.services.repair import repair as run_repair

        options = RepairOptions(
            config,
            state_dir,
            spool=spool,
            dry_run=dry_run,
            max_out_percent=max_out,
            strike_limit=strikes,
            check_budget_s=check_budget,
            slurm_conf=slurm_conf,
            resource_group=resource_group,
            python=python,
        )
        finish(run_repair(options), output, view.show)


def incidents(
    state_dir: Path = STATE_DIR_OPTION,
    last: int = typer.Option(20, "--events", min=0, metavar="N", help="Show the last N events (0: none)."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Every repair incident, open and closed, and the latest events of the repair loop."""
    with guarded("nodes incidents", output):
        from hpclz.cli.views import repair as view
        from hpclz.services.repair import IncidentsOptions
        from hpclz.services.repair import incidents as run_incidents

        finish(run_incidents(IncidentsOptions(state_dir, last)), output, view.show)
