"""A running node keeps the scripts its VM was created with: the plan names the scheduler, login nodes and partitions
whose CloudInit (or slurm.conf lines) differ from the cluster definition last applied, and the steps that replace them.

A node's CloudInit rides in its customData, "made available to the VM during first startup or setup" ("For single
VMs, you can't update custom data in the VM model"; learn.microsoft.com/azure/virtual-machines/custom-data), and
cyclecloud-slurm writes slurm.conf only when its install runs on the scheduler (Azure/cyclecloud-slurm@50e6739
azure-slurm-install/install.py l.529-593). The replacement is the upgrade road's: `cyclecloud terminate_node` /
`start_node` under raised SlurmdTimeout and SlurmctldTimeout (hpclz.plan.upgrade; slurm.schedmd.com/upgrades.html).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from rich.console import Console

from hpclz.cli.views.changeset import impacts, print_changeset
from hpclz.config.loader import LoadedConfig, load_config
from hpclz.config.root import LandingZoneConfig
from hpclz.deploy.next_steps import node_script_steps
from hpclz.plan.changeset import ChangeSet
from hpclz.plan.contract import changeset_for, force_replacements, targeted
from hpclz.plan.decode import decode_text
from hpclz.render.build import build_plan
from hpclz.render.cloudinit import user_data
from hpclz.render.job_storage import SCRIPT as JOB_STORAGE_SCRIPT
from hpclz.render.writer import dumps
from hpclz.state.model import ResourceRecord, StateDocument
from tests.conftest import REPO
from tests.plan.support import applied_state, edited, preset

STONE = ("8.9.0", "4.0.6", "25.05.5")
CURRENT = ("8.9.1", "4.0.9", "25.11.5")


def _loaded(config: LandingZoneConfig) -> LoadedConfig:
    return dataclasses.replace(load_config(REPO / "configs" / "energy.yaml"), config=config)


def _server(state: StateDocument) -> ResourceRecord:
    (server,) = [
        r for r in state.resources if r.type.lower() == "microsoft.compute/virtualmachines" and "-cc-" in r.name
    ]
    return server


def _cloud_init(template: str, section: str, edit: Callable[[list[str]], list[str]]) -> str:
    """`template` with the CloudInit script of one `[[node ...]]` / `[[nodearray ...]]` section edited."""
    lines = template.split("\n")
    head = lines.index(f"    [[{section}]]")
    start = next(i for i in range(head, len(lines)) if lines[i].startswith("    CloudInit = '''"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].endswith("'''"))
    return "\n".join([*lines[: start + 1], *edit(lines[start + 1 : end]), *lines[end:]])


def _older(config: LandingZoneConfig, edit: Callable[[dict[str, Any]], None]) -> StateDocument:
    """What an apply by an older hpclz left: the same config, but its server's userData carries the cluster
    definition `edit` makes of today's, and the compute deployment was another template (another hash)."""
    state = applied_state(config)
    server = _server(state)
    body = server.properties["properties"]
    text = decode_text(body["userData"])
    assert text is not None
    document = json.loads(text)
    edit(document)
    body["userData"] = user_data(dumps(document))
    state.deployments[server.deployment].template_hash = "the older hpclz's"
    return state


def _without_job_storage(document: dict[str, Any]) -> None:
    """An hpclz before the job credential: its scheduler installed no 40-hpclz-job-storage.sh prolog."""
    before = document["template"]
    document["template"] = _cloud_init(
        before, "node scheduler", lambda script: [x for x in script if JOB_STORAGE_SCRIPT not in x]
    )
    assert document["template"] != before


def _older_script(section: str) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        document["template"] = _cloud_init(document["template"], section, lambda s: [*s[:1], "true", *s[1:]])

    return edit


def _changes(config: LandingZoneConfig, state: StateDocument) -> ChangeSet:
    return changeset_for(_loaded(config), build_plan(config), state)


def _text(changes: ChangeSet) -> str:
    console = Console(width=400, no_color=True, record=True, force_terminal=False)
    print_changeset(console, changes)
    return console.export_text()


def _at(steps: list[str], *needles: str) -> list[int]:
    return [next(i for i, s in enumerate(steps) if needle in s) for needle in needles]


def test_an_older_renders_scheduler_script_plans_the_schedulers_replacement_under_raised_timeouts() -> None:
    config = preset("energy")

    def older(document: dict[str, Any]) -> None:
        _without_job_storage(document)
        _older_script("nodearray gpu")(document)
        _older_script("nodearray login")(document)

    changes = _changes(config, _older(config, older))
    scripts = changes.node_scripts
    assert scripts is not None
    assert (scripts.scheduler, scripts.login, scripts.partitions) == (["CloudInit"], True, ["gpu"])
    assert not scripts.covered_by
    raised, sched, announced, restored, roll, login = _at(
        scripts.steps,
        "raise SlurmdTimeout and SlurmctldTimeout",
        "`cyclecloud terminate_node <cluster> scheduler`",
        "`sudo scontrol reconfigure` there",
        "restore the timeouts",
        "partition gpu (new CloudInit)",
        "login nodes (new CloudInit)",
    )
    # The scheduler goes first: new nodes of the partition need its new prolog (the order of the upgrade road), the
    # login nodes last, as the upgrade road's clients. Right after the new scheduler answers `scontrol ping`, `scontrol
    # reconfigure` gives the running slurmd its address (hpclz.plan.upgrade.CTLD_ANNOUNCED cites why).
    assert (raised, sched, announced, restored, roll, login) == (0, 1, 2, 3, 4, 5) and len(scripts.steps) == 6
    assert scripts.steps[announced].index("`scontrol ping`") < scripts.steps[announced].index("scontrol reconfigure")
    assert "terminate_node <cluster> <login node>" in scripts.steps[login]
    step = scripts.steps[sched]
    assert step.index("terminate_node <cluster> scheduler") < step.index("start_node <cluster> scheduler")
    assert "slurmctld is down" in step and "running jobs keep running" in step
    assert "/sched/<cluster>/spool/slurmctld" in step  # what the new VM finds (hpclz.plan.upgrade.SCHED_KEPT)
    assert "hpclz nodes roll CONFIG --partition gpu" in scripts.steps[roll]
    assert [s.split(". ", 1)[0] for s in scripts.steps] == [str(n) for n in range(1, len(scripts.steps) + 1)]

    text = _text(changes)
    assert "Node scripts: a running node keeps what its VM was created with" in text
    assert "scheduler (CloudInit), login nodes (CloudInit), partition gpu (CloudInit)" in text
    assert any(line.startswith("the scheduler is replaced after the deploy") for line in impacts(changes))
    assert any(
        "partition gpu, login nodes" in line for line in impacts(changes) if line.startswith("nodes running now")
    )
    # deploy prints the same steps among its next steps
    printed = node_script_steps(changes)
    assert printed[0].startswith("Node scripts:") and [s.strip() for s in printed[1:]] == scripts.steps


def test_the_same_render_plans_no_replacement() -> None:
    config = preset("energy")
    changes = _changes(config, applied_state(config))
    assert changes.node_scripts is None
    assert "Node scripts" not in _text(changes)
    assert node_script_steps(changes) == []
    assert not [line for line in impacts(changes) if "scheduler is replaced" in line]
    # A state kept as properties only (older states) still holds the server's userData.
    assert _changes(config, applied_state(config, properties_only=True)).node_scripts is None


def test_only_the_slurm_conf_lines_differ() -> None:
    """cyclecloud-slurm appends slurm.additional.config (hpclz's HpclzSlurmConfig parameter) to the slurm.conf it
    writes at its install (install.py l.588-593): a new idle time reaches Slurm only through a new scheduler VM."""

    def idle(minutes: int) -> Callable[[dict[str, Any]], None]:
        def edit(d: dict[str, Any]) -> None:
            for p in d["compute"]["partitions"]:
                p["idle_shutdown_minutes"] = minutes

        return edit

    before, after = edited(preset("energy"), idle(20)), edited(preset("energy"), idle(45))
    changes = _changes(after, applied_state(before))
    scripts = changes.node_scripts
    assert scripts is not None
    assert "slurm.conf lines" in scripts.scheduler
    raised, sched, announced, restored = _at(
        scripts.steps,
        "raise SlurmdTimeout",
        "terminate_node <cluster> scheduler",
        "scontrol ping",
        "restore the timeouts",
    )
    # No node array's script changed: the scheduler's replacement alone, its address announced before the restore.
    assert (raised, sched, announced, restored) == (0, 1, 2, 3) and len(scripts.steps) == 4
    assert scripts.steps[1].startswith("2. scheduler (new ") and "slurm.conf lines" in scripts.steps[1]


def _on(triple: tuple[str, str, str], image_release: str | None = None) -> LandingZoneConfig:
    def edit(d: dict[str, Any]) -> None:
        d["compute"]["cyclecloud"].update(
            dict(zip(("version", "slurm_project_version", "slurm_version"), triple, strict=True))
        )
        if image_release:
            d["compute"]["cyclecloud"]["image_release"] = image_release

    return edited(preset("energy"), edit)


def test_a_stack_upgrade_replaces_the_nodes_anyway_so_no_second_replacement() -> None:
    """The upgrade road already makes the scheduler and login nodes new VMs and rolls every partition
    (hpclz.plan.upgrade): the scripts come with it, and the plan lists no replacement of its own."""
    old = _on(STONE, "8.9.0")
    changes = _changes(_on(CURRENT, "8.9.0"), _older(old, _without_job_storage))
    up, scripts = changes.stack_upgrade, changes.node_scripts
    assert up is not None and up.allowed and not up.replaces_server
    assert scripts is not None and "CloudInit" in scripts.scheduler
    assert scripts.steps == [] and scripts.covered_by.startswith("the stack upgrade's steps")
    assert "covered by the stack upgrade's steps" in _text(changes)
    assert node_script_steps(changes) == []


def test_a_replaced_server_starts_every_node_again() -> None:
    config = preset("energy")
    changes = _changes(config, _older(config, _without_job_storage))
    assert changes.node_scripts is not None and changes.node_scripts.steps
    force_replacements(changes, [_server(applied_state(config)).id])
    assert changes.node_scripts.steps == []
    assert changes.node_scripts.covered_by.startswith("the CycleCloud server's replacement")


def test_a_target_without_the_server_leaves_the_scripts_for_a_later_deploy() -> None:
    """`--target` deploys only the named resources' deployments: without the server's, its userData (the new cluster
    definition) is not sent, and no node needs replacing yet."""
    config = preset("energy")
    state = _older(config, _without_job_storage)
    server = _server(state)
    vnet = next(r for r in state.resources if r.type.lower() == "microsoft.network/virtualnetworks")
    elsewhere = _changes(config, state)
    targeted(elsewhere, build_plan(config), [vnet.id])
    assert elsewhere.node_scripts is None
    there = _changes(config, state)
    targeted(there, build_plan(config), [server.id])
    assert there.node_scripts is not None and there.node_scripts.steps
