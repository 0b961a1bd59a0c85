"""One pass of closed-loop repair for `hpclz nodes repair`, and the read-only view for `hpclz nodes incidents`.

`repair_pass` runs where Slurm is (the scheduler, or --slurm-conf): it opens an incident for each failing report
the health gate left in the spool (`python3 -m hpclz.verify.gate ... --spool DIR`), then steps every open incident
as far as it goes now (drain, classify, repair through Azure, check through a Slurm job, return or retire). Run it
from cron or a systemd timer; it holds a lock, so two passes never overlap. A spooled report is renamed `*.seen`
only once its incident is saved, so a pass killed in between reads it again (adding evidence, opening nothing new).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, ValidationError

from hpclz.config.loader import LoadedConfig
from hpclz.errors import ExitCode, HpclzError
from hpclz.output import ResultBody
from hpclz.remediate.model import Event, Incident
from hpclz.remediate.store import Store
from hpclz.verify.model import NodeReport

SEEN_SUFFIX = ".seen"


@dataclass(frozen=True)
class RepairOptions:
    config: Path
    state_dir: Path
    spool: Path | None = None
    dry_run: bool = False
    max_out_percent: float = 10.0
    strike_limit: int = 3
    check_budget_s: int = 300
    slurm_conf: Path | None = None
    resource_group: str | None = None  # default: the compute resource group the state recorded
    # The post-repair check's start on the node: an interpreter with hpclz every node has; None: python3 with the
    # node bundle under /sched, as `hpclz verify` starts it (hpclz.verify.session.agent_code).
    python: str | None = None


@dataclass(frozen=True)
class IncidentsOptions:
    state_dir: Path
    last_events: int = 20


class RepairResult(ResultBody):
    dry_run: bool = False
    opened: list[str] = Field(default_factory=list, description="incident ids opened from the spool this pass")
    incidents: list[Incident] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)


def repair_pass(loaded: LoadedConfig, opts: RepairOptions) -> RepairResult:
    from hpclz.azure.scheduler import azure_clients, cluster_name, compute_group
    from hpclz.remediate.engine import Policy, Remediator
    from hpclz.remediate.fleet import AzureFleet
    from hpclz.remediate.recheck import SlurmRecheck
    from hpclz.slurm.client import SlurmClient
    from hpclz.verify.session import agent_code, agent_options

    client = SlurmClient.from_env(opts.slurm_conf)
    group = opts.resource_group or compute_group(loaded)
    if group is None:
        raise HpclzError(
            "nodes repair: no compute resource group in the state: deploy first, or name it with --resource-group",
            exit_code=ExitCode.USAGE,
        )
    store = Store(opts.state_dir)
    engine = Remediator(
        store=store,
        scheduler=client,
        fleet=AzureFleet(azure_clients(loaded), group, cluster_name(loaded)),
        checker=SlurmRecheck(
            client,
            agent_options(loaded.config, None, False),
            opts.state_dir / "checks",
            budget_s=opts.check_budget_s,
            code=agent_code(loaded.config, opts.python, None, "hpclz.verify.agent"),
        ),
        policy=Policy(max_out_percent=opts.max_out_percent, strike_limit=opts.strike_limit, dry_run=opts.dry_run),
    )
    with store.locked():
        files, reports = _spooled(opts.spool)
        opened = [] if opts.dry_run else [i.id for i in engine.observe(reports)]
        if not opts.dry_run:
            for path in files:
                path.rename(path.with_name(path.name + SEEN_SUFFIX))
        events = engine.run()
    state = store.load()
    return RepairResult(dry_run=opts.dry_run, opened=opened, incidents=list(state.incidents.values()), events=events)


def read_incidents(opts: IncidentsOptions) -> RepairResult:
    store = Store(opts.state_dir)
    if not store.state_file.exists():
        raise HpclzError(f"{store.state_file}: no remediation state here", exit_code=ExitCode.USAGE)
    events = store.events()[-opts.last_events :] if opts.last_events else []
    return RepairResult(incidents=list(store.load().incidents.values()), events=events)


def _spooled(spool: Path | None) -> tuple[list[Path], list[NodeReport]]:
    if spool is None or not spool.is_dir():
        return [], []
    files = sorted(spool.glob("*.json"))
    reports = []
    for path in files:
        try:
            reports.append(NodeReport.model_validate(json.loads(path.read_text())))
        except (ValueError, ValidationError) as exc:
            raise HpclzError(
                f"{path}: not a verify report ({str(exc).splitlines()[0]})", exit_code=ExitCode.USAGE
            ) from None
    return files, reports
