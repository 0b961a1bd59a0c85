"""`hpclz plan` walks a triple upgrade as Slurm's upgrade guide orders it, and refuses a skip.

https://slurm.schedmd.com/upgrades.html: slurmdbd first, then slurmctld, then slurmd and the clients; a Slurm 25.11
daemon accepts 25.05, 24.11 and 24.05, so 23.11 must stop at 25.05 first.
"""

from __future__ import annotations

import base64
import json
import lzma
from typing import Any

from rich.console import Console

from hpclz.cli.views.changeset import print_changeset
from hpclz.config.root import LandingZoneConfig
from hpclz.plan.changeset import ChangeSet, Policy
from hpclz.plan.config_diff import config_changes, config_snapshot
from hpclz.plan.racks import rack_partitions
from hpclz.plan.upgrade import PATHS, stack_upgrade
from hpclz.render.build import build_plan
from hpclz.render.cloudinit import USER_RECORDS_BLOB
from hpclz.render.model import DeploymentPlan
from tests.plan.support import edited, preset
from tests.render.conftest import cyclecloud_vms

OLD_2311 = ("8.7.1", "3.0.11", "23.11.10-2")
OLD_2405 = ("8.7.1", "3.0.11", "24.05.4-2")
STONE = ("8.9.0", "4.0.6", "25.05.5")
CURRENT = ("8.9.1", "4.0.9", "25.11.5")


def _on(triple: tuple[str, str, str]) -> LandingZoneConfig:
    def edit(d: dict[str, Any]) -> None:
        d["compute"]["cyclecloud"].update(
            dict(zip(("version", "slurm_project_version", "slurm_version"), triple, strict=True))
        )

    return edited(preset("energy"), edit)


def _plan(before: tuple[str, str, str], after: tuple[str, str, str]) -> ChangeSet:
    old, new = _on(before), _on(after)
    snapshot = config_snapshot(old)
    changes = ChangeSet(mode="offline", landing_zone="energy", environment="prod")
    changes.config_changes = config_changes(snapshot, new)
    changes.stack_upgrade = stack_upgrade(snapshot, config_snapshot(new))
    return changes


def _text(changes: ChangeSet) -> str:
    console = Console(width=400, no_color=True, record=True, force_terminal=False)
    print_changeset(console, changes)
    return console.export_text()


def test_a_skip_past_the_window_is_refused_with_the_road() -> None:
    changes = _plan(OLD_2311, CURRENT)
    up = changes.stack_upgrade
    assert up is not None and not up.allowed
    assert "skips 4 major releases" in up.reason and "3 previous" in up.reason
    assert up.road == [
        "CycleCloud 8.9.0 + cyclecloud-slurm 4.0.6 + Slurm 25.05.5",
        "CycleCloud 8.9.1 + cyclecloud-slurm 4.0.9 + Slurm 25.11.5",
    ]
    assert set(changes.blocked) == set(PATHS)
    assert all(c.verdict.policy is Policy.NOT_ALLOWED for c in changes.config_changes if c.path in PATHS)
    text = _text(changes)
    assert "NOT ALLOWED: Slurm 23.11 -> 25.11 skips 4 major releases" in text
    assert "1. CycleCloud 8.9.0 + cyclecloud-slurm 4.0.6 + Slurm 25.05.5" in text


def _order(steps: list[str], *needles: str) -> list[int]:
    return [next(i for i, s in enumerate(steps) if needle in s) for needle in needles]


def test_walk_from_the_old_triple_one_hop_at_a_time() -> None:
    first, second = _plan(OLD_2311, STONE), _plan(STONE, CURRENT)
    for changes, old, new in ((first, "23.11.10-2", "25.05.5"), (second, "25.05.5", "25.11.5")):
        up = changes.stack_upgrade
        assert up is not None and up.allowed, up
        assert changes.blocked == []
        # energy keeps Slurm accounting: slurmdbd goes first, then slurmctld, every partition's slurmd, clients last.
        dbd, ctld, slurmd, login = _order(
            up.steps, f"slurmdbd {old} -> {new}", f"slurmctld {old} -> {new}", "slurmd ", "login nodes"
        )
        assert dbd < ctld < slurmd < login
        partitions = [p.name for p in preset("energy").compute.partitions]
        assert [s for s in up.steps if s.split(". ", 1)[1].startswith("slurmd ")] == [
            s for s in up.steps if any(f"partition {p}:" in s for p in partitions)
        ]
        assert len([s for s in up.steps if "hpclz nodes roll" in s]) == len(partitions)
        drained = [c for c in changes.config_changes if c.path in PATHS]
        assert drained and all(c.verdict.policy.rank >= Policy.DRAIN_PARTITION.rank for c in drained)
    assert first.stack_upgrade is not None
    # 8.7.1 was installed from packages, with no Marketplace image hpclz knows: the server is recreated, after the
    # steps that leave no node behind and keep the users' UIDs.
    terminate, users, replace = _order(
        first.stack_upgrade.steps, "cyclecloud terminate_cluster", "hpclz-cc-users export", "CycleCloud 8.7.1 -> 8.9.0"
    )
    assert terminate < users < replace
    assert "Marketplace image version 8.9.020260513" in first.stack_upgrade.steps[replace]
    assert "image_release" not in first.stack_upgrade.steps[replace]  # no image of 8.7.1 to keep
    assert "Slurm 25.05 -> 25.11 is within the window" in _text(second)


def _keeping_the_image(triple: tuple[str, str, str], release: str) -> LandingZoneConfig:
    def edit(d: dict[str, Any]) -> None:
        d["compute"]["cyclecloud"]["image_release"] = release

    return edited(_on(triple), edit)


def test_a_new_cyclecloud_release_on_the_same_image_is_an_in_place_upgrade() -> None:
    old, new = _on(STONE), _keeping_the_image(CURRENT, "8.9.0")
    up = stack_upgrade(config_snapshot(old), config_snapshot(new))
    assert up is not None and up.allowed and not up.replaces_server
    (server,) = [s for s in up.steps if "CycleCloud 8.9.0 -> 8.9.1" in s]
    assert "in place" in server and "yum -y upgrade cyclecloud8-8.9.1" in server and "--replace" not in server
    assert not [s for s in up.steps if "terminate_cluster" in s]
    # Nothing the deploy sends replaces the server: its imageReference is the one it was created with, and only
    # userData names the release it runs now.
    (before,), (after,) = (_server(build_plan(c)) for c in (old, new))
    assert (
        before["properties"]["storageProfile"]["imageReference"]
        == after["properties"]["storageProfile"]["imageReference"]
    )
    assert _user_data(after)["cyclecloud_version"] == "8.9.1" and _user_data(before)["cyclecloud_version"] == "8.9.0"
    changes = config_changes(config_snapshot(old), new)
    assert all(c.verdict.policy is Policy.DRAIN_PARTITION for c in changes if c.path in PATHS)


def test_without_a_new_server_the_scheduler_and_login_nodes_are_new_vms_not_restarts() -> None:
    """A kept server keeps the cluster running: the scheduler and login nodes get the new Slurm only as new VMs.
    Cluster-init runs once per VM ("it places a file in /mnt/cluster-init/.run/(project)/(spec) to ensure the script
    doesn't run again on a subsequent converge", learn.microsoft.com/azure/cyclecloud/how-to/projects) and
    cyclecloud-slurm apt-mark holds Slurm (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/ubuntu.sh l.40-55);
    `cyclecloud terminate_node` / `start_node` (learn.microsoft.com/azure/cyclecloud/cli) make the new VM, before
    the partitions roll ("Rolling upgrades are also possible if the slurmctld is upgraded first",
    slurm.schedmd.com/upgrades.html)."""
    in_place = stack_upgrade(config_snapshot(_on(STONE)), config_snapshot(_keeping_the_image(CURRENT, "8.9.0")))
    assert in_place is not None and in_place.allowed and not in_place.replaces_server
    steps = in_place.steps
    assert not [s for s in steps if "restart the" in s]
    (ctld,) = [s for s in steps if "slurmctld 25.05.5 -> 25.11.5" in s]
    assert ctld.index("back up StateSaveLocation") < ctld.index("cyclecloud terminate_node <cluster> scheduler")
    assert ctld.index("terminate_node <cluster> scheduler") < ctld.index("cyclecloud start_node <cluster> scheduler")
    assert "installs Slurm 25.11.5; a reboot keeps Slurm 25.05.5" in ctld
    # What the new scheduler VM finds (cyclecloud-slurm install.py l.139, l.417-436, l.501-504).
    assert "/sched/<cluster>/spool/slurmctld" in ctld and "slurmdbd.conf" in ctld
    (login,) = [s for s in steps if s.split(". ", 1)[1].startswith("login nodes")]
    assert "cyclecloud terminate_node <cluster> <login node>" in login and "start_node <cluster> <login node>" in login
    # The server's re-import first, then slurmdbd (on the scheduler node), the scheduler, the partitions, the logins.
    server, dbd, sched, first_roll, logins = _order(
        steps,
        "CycleCloud 8.9.0 -> 8.9.1 in place",
        "slurmdbd ",
        "terminate_node <cluster> scheduler",
        "nodes roll",
        "<login node>",
    )
    assert server < dbd < sched < first_roll < logins
    assert "before the next step replaces that node" in steps[dbd]


def test_the_scheduler_is_replaced_under_raised_timeouts_restored_before_the_rolls() -> None:
    """Slurm's slurmctld procedure (SchedMD/slurm@19f8131 doc/html/upgrades.shtml l.440-457): "Increase configured
    SlurmdTimeout and SlurmctldTimeout values and execute scontrol reconfig" first ("If the timeout is reached, nodes
    may be marked DOWN and their jobs killed"), and, once "a job's ability to successfully start and finish" is
    validated, "Restore the preferred SlurmdTimeout and SlurmctldTimeout values". The values go in site_specific.conf,
    which the new scheduler VM keeps and its slurm.conf includes last (Azure/cyclecloud-slurm@50e6739
    azure-slurm-install/install.py l.579-586, templates/slurm.conf.template l.77)."""
    in_place = stack_upgrade(config_snapshot(_on(STONE)), config_snapshot(_keeping_the_image(CURRENT, "8.9.0")))
    assert in_place is not None and in_place.allowed and not in_place.replaces_server
    steps = in_place.steps
    raised, dbd, sched, restored, first_roll = _order(
        steps,
        "raise SlurmdTimeout and SlurmctldTimeout",
        "slurmdbd ",
        "terminate_node <cluster> scheduler",
        "restore the timeouts",
        "nodes roll",
    )
    assert raised < dbd < sched < restored < first_roll
    for step in (steps[raised], steps[restored]):
        assert "/sched/<cluster>/site_specific.conf" in step and "`sudo scontrol reconfigure`" in step
    assert "`SlurmdTimeout=<seconds>` and `SlurmctldTimeout=<seconds>`" in steps[raised]
    assert "a job starts and finishes" in steps[restored]

    # Without accounting the raise still comes right before the scheduler goes.
    def no_accounting(d: dict[str, Any]) -> None:
        d["compute"]["accounting"] = {"mode": "disabled"}

    up = stack_upgrade(
        config_snapshot(edited(_on(STONE), no_accounting)),
        config_snapshot(edited(_keeping_the_image(CURRENT, "8.9.0"), no_accounting)),
    )
    assert up is not None and not [s for s in up.steps if "slurmdbd 25.05.5 -> " in s]
    raised, sched, announced, restored = _order(
        up.steps,
        "raise SlurmdTimeout",
        "terminate_node <cluster> scheduler",
        "`sudo scontrol reconfigure` there",
        "restore the timeouts",
    )
    assert (raised + 1, sched + 1, announced + 1) == (sched, announced, restored)


def test_the_running_slurmd_learn_the_new_schedulers_address_before_a_job_is_tried() -> None:
    """cyclecloud-slurm writes `SlurmCtldHost=<hostname>(<private IP>)` with the new VM's own address
    (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.69, l.536), and CycleCloud gives a node "a
    dynamically-assigned private IP address" unless it sets `PrivateIp` (MicrosoftDocs/azure-docs@4df484e
    articles/cyclecloud/how-to/network-security.md). `scontrol reconfigure` makes "all slurmctld and slurmd daemons
    ... re-read the configuration file" (SchedMD/slurm@ed147cc doc/man/man1/scontrol.1 l.377-380); `scontrol ping`
    says whether slurmctld answers (l.277-280). So: ping, reconfigure, and only then the job that must start and
    finish before the timeouts are restored."""
    in_place = stack_upgrade(config_snapshot(_on(STONE)), config_snapshot(_keeping_the_image(CURRENT, "8.9.0")))
    assert in_place is not None and in_place.allowed and not in_place.replaces_server
    steps = in_place.steps
    sched, announced, restored, first_roll = _order(
        steps, "terminate_node <cluster> scheduler", "scontrol ping", "restore the timeouts", "nodes roll"
    )
    assert sched + 1 == announced and announced + 1 == restored < first_roll
    step = steps[announced]
    assert step.index("`scontrol ping`") < step.index("`sudo scontrol reconfigure`")
    assert "SlurmctldHost" in step and "private IP" in step
    assert "a job starts and finishes" in steps[restored] and "a job" not in step
    # A replaced server ends every job and starts every node again as a new VM (before_replace): no slurmd is left
    # running with the old address, so no reconfigure step.
    replaced = _plan(STONE, CURRENT).stack_upgrade
    assert replaced is not None and replaced.replaces_server
    assert not [s for s in replaced.steps if "scontrol ping" in s]


def test_a_replaced_server_backs_up_before_the_cluster_is_terminated() -> None:
    """A replaced server starts the cluster again after `terminate_cluster`: the backups come before it, and no step
    asks for a node that is gone."""
    up = _plan(STONE, CURRENT).stack_upgrade
    assert up is not None and up.replaces_server
    dbd, ctld, terminate, replace = _order(
        up.steps,
        "slurmdbd 25.05.5 -> 25.11.5",
        "slurmctld 25.05.5 -> 25.11.5",
        "cyclecloud terminate_cluster",
        "CycleCloud 8.9.0 -> 8.9.1",
    )
    assert dbd < ctld < terminate < replace
    assert "back up the accounting database now, before the cluster is terminated" in up.steps[dbd]
    assert "back up StateSaveLocation (/sched/<cluster>/spool/slurmctld) now" in up.steps[ctld]
    assert not [s for s in up.steps if "terminate_node" in s or "restart the" in s]
    # Every job ends at power_down_force before terminate_cluster: no timeout is raised to keep one alive.
    assert not [s for s in up.steps if "SlurmdTimeout" in s]
    (login,) = [s for s in up.steps if s.split(". ", 1)[1].startswith("login nodes")]
    assert "the new server starts the login nodes again, with Slurm 25.11.5" in login


def test_a_new_release_with_a_new_image_replaces_the_server_and_says_how_to_keep_it() -> None:
    up = _plan(STONE, CURRENT).stack_upgrade
    assert up is not None and up.allowed and up.replaces_server
    terminate, users, replace = _order(
        up.steps, "cyclecloud terminate_cluster", "hpclz-cc-users export", "CycleCloud 8.9.0 -> 8.9.1"
    )
    assert terminate < users < replace
    assert "set compute.cyclecloud.image_release: 8.9.0" in up.steps[replace]
    changes = _plan(STONE, CURRENT).config_changes
    assert all(c.verdict.policy is Policy.REPLACE for c in changes if c.path == "compute.cyclecloud.version")


def _server(plan: DeploymentPlan) -> list[dict[str, Any]]:
    return cyclecloud_vms(plan)


def _user_data(vm: dict[str, Any]) -> dict[str, Any]:
    raw = base64.b64decode(vm["properties"]["userData"])
    return dict(json.loads(lzma.decompress(raw)))  # xz, as hpclz.render.payload packs the server's userData


def test_24_05_goes_straight_to_25_11() -> None:
    up = _plan(OLD_2405, CURRENT).stack_upgrade
    assert up is not None and up.allowed and up.road == ["CycleCloud 8.9.1 + cyclecloud-slurm 4.0.9 + Slurm 25.11.5"]


def test_going_back_or_to_a_source_is_refused() -> None:
    back = _plan(CURRENT, STONE).stack_upgrade
    assert back is not None and not back.allowed and "goes back a release" in back.reason
    source = _plan(STONE, OLD_2405).stack_upgrade
    assert source is not None and not source.allowed and "upgrade source only" in source.reason


def test_an_unknown_triple_is_refused() -> None:
    up = _plan(("8.6.0", "3.0.9", "23.11.9-1"), CURRENT).stack_upgrade
    assert up is not None and not up.allowed and "not in hpclz's table" in up.reason


def test_no_triple_change_means_no_upgrade() -> None:
    assert _plan(CURRENT, CURRENT).stack_upgrade is None


def _zone(d: dict[str, Any]) -> None:
    d["compute"]["service_zone"] = "2" if d["compute"]["service_zone"] != "2" else "3"


def _image(d: dict[str, Any]) -> None:
    d["compute"]["cyclecloud"]["image"] = "azurecyclecloud:azure-cyclecloud:cyclecloud8-gen2:8.9.020260513"


def _entra(d: dict[str, Any]) -> None:
    d["identity"]["cyclecloud_entra"] = {
        "tenant_id": "11111111-1111-1111-1111-111111111111",
        "client_id": "22222222-2222-2222-2222-222222222222",
    }


def test_every_change_that_recreates_the_server_says_to_terminate_the_cluster_and_keep_the_users() -> None:
    before = preset("energy")
    for edit, path in (
        (_zone, "compute.service_zone"),
        (_image, "compute.cyclecloud.image"),
        (_entra, "identity.cyclecloud_entra"),
    ):
        changes = [c for c in config_changes(config_snapshot(before), edited(before, edit)) if c.path.startswith(path)]
        assert changes, path
        for change in changes:
            assert change.verdict.policy is Policy.REPLACE, path
            action = change.verdict.action_needed
            assert action.index("state=power_down_force") < action.index("cyclecloud terminate_cluster"), path
            assert action.index("cyclecloud terminate_cluster") < action.index("hpclz-cc-users export"), path
            assert action.index("hpclz-cc-users export") < action.index("hpclz deploy --replace"), path
            assert USER_RECORDS_BLOB in action


def test_a_rack_partition_is_upgraded_whole_not_rolled() -> None:
    """ai-training's gb300 is out of Slurm's power saving and brought up whole by scale_m1 (docs/gb-racks.md): its
    slurmd step is the whole-rack path, the H-class partitions' the roll."""

    def on(triple: tuple[str, str, str]) -> LandingZoneConfig:
        def edit(d: dict[str, Any]) -> None:
            keys = ("version", "slurm_project_version", "slurm_version")
            d["compute"]["cyclecloud"].update(dict(zip(keys, triple, strict=True)))

        return edited(preset("ai-training"), edit)

    old, new = on(STONE), on(CURRENT)
    up = stack_upgrade(config_snapshot(old), config_snapshot(new), rack_partitions(new))
    assert up is not None and up.allowed, up
    (rack,) = [s for s in up.steps if "on partition gb300:" in s]
    assert "hpclz nodes roll" not in rack and "scale_m1 power_up --racks 2" in rack
    for plain in ("h100", "h200"):
        (step,) = [s for s in up.steps if f"on partition {plain}:" in s]
        assert f"hpclz nodes roll CONFIG --partition {plain}" in step
