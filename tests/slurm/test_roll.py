"""`hpclz nodes roll|status` against a real slurmctld with power saving (tests/support/slurm_power.py).

What Slurm 22.05.8 did here is what the code relies on: POWER_DOWN_ASAP drains a node at once, powers an idle one
down through the SuspendProgram within the power-save interval, and leaves a busy one running its job until the
job ends (scontrol(1): "Currently running jobs will complete first and no additional jobs will be allocated").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hpclz.slurm.client import SlurmClient
from hpclz.verify.dispatch import select
from tests.conftest import REPO, CliResult
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm
from tests.support.slurm_power import power_cluster, suspended, wait_until

__all__ = ["power_cluster"]
slurm_cluster = harness.slurm_cluster

Run = Callable[..., CliResult]


def zone_with(tmp_path: Path, first: str, second: str) -> Path:
    """ai-training with its two H-class partitions renamed after the test cluster's; its GB300 rack partition,
    which the test cluster has no nodes for, left out."""
    text = (REPO / "configs" / "ai-training.yaml").read_text()
    text = re.sub(r"\n    - name: gb300\n(?:      .*\n)+", "\n", text)
    text = re.sub(r"\bh200\b", second, re.sub(r"\bh100\b", first, text))
    path = tmp_path / "lz.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def zone(tmp_path: Path) -> Path:
    return zone_with(tmp_path, "hpc", "static")


def nodes(run_cli: Run, verb: str, zone: Path, cluster: LocalSlurm, *args: str) -> tuple[int, dict[str, Any]]:
    done = run_cli("nodes", verb, str(zone), "--slurm-conf", str(cluster.conf), *args, "-o", "json")
    envelope = json.loads(done.stdout)
    return done.exit_code, envelope


def by_name(envelope: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["name"]: n for n in envelope["result"]["nodes"]}


def test_an_idle_node_is_drained_then_powered_down_by_the_suspend_program(
    run_cli: Run, zone: Path, power_cluster: LocalSlurm
) -> None:
    code, rolled = nodes(run_cli, "roll", zone, power_cluster, "-p", "hpc", "-w", "cc1")
    assert code == 0, rolled
    node = by_name(rolled)["cc1"]
    assert node["reason"] == "hpclz: roll: new node definition"
    assert node["phase"] in ("power down pending", "powering down", "powered down")
    assert rolled["result"]["command"] == (
        "scontrol update NodeName=cc1 State=POWER_DOWN_ASAP 'Reason=hpclz: roll: new node definition'"
    )
    code, followed = nodes(run_cli, "status", zone, power_cluster, "-p", "hpc", "-w", "cc1", "--wait", "60")
    assert code == 0, followed
    assert by_name(followed)["cc1"]["phase"] == "powered down"
    assert by_name(followed)["cc1"]["state"] == "idle~"
    assert "cc1" in suspended(power_cluster)
    assert not {"cc2", "cc3", "cc4"} & set(suspended(power_cluster))  # only the node asked for


def test_a_node_running_a_job_keeps_it_and_powers_down_when_it_ends(
    run_cli: Run, zone: Path, power_cluster: LocalSlurm, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\nwhile [ ! -e {release} ]; do sleep 0.2; done\necho finished\n")
    out = tmp_path / "job.out"
    job = power_cluster.client("sbatch", "--parsable", "-p", "hpc", "-w", "cc2", "-o", str(out), str(script)).strip()
    client = SlurmClient(conf=power_cluster.conf, extra_env=power_cluster.job_env)
    wait_until(lambda: client.job_states([job])[job] == "RUNNING", "the job running on cc2")

    code, rolled = nodes(run_cli, "roll", zone, power_cluster, "-p", "hpc", "-w", "cc2", "--why", "image 2024.11")
    assert code == 0, rolled
    node = by_name(rolled)["cc2"]
    assert (node["state"], node["phase"]) == ("draining!", "waiting for its jobs to end")
    assert node["reason"] == "hpclz: roll: image 2024.11"

    # Following for a while changes nothing: the job runs on, the node is not powered down, status --wait says so.
    code, followed = nodes(run_cli, "status", zone, power_cluster, "-p", "hpc", "-w", "cc2", "--wait", "3")
    assert code == 1
    assert by_name(followed)["cc2"]["phase"] == "waiting for its jobs to end"
    assert client.job_states([job])[job] == "RUNNING"
    assert "cc2" not in suspended(power_cluster)

    # A Scheduled Events drain on top (the watcher's reason) must not make verify --drain resume it.
    power_cluster.client(
        "scontrol", "update", "NodeName=cc2", "State=DRAIN", "Reason=hpclz: scheduled-event Reboot E1 not before x"
    )
    info = {n.name: n for n in client.nodes(partition="hpc")}["cc2"]
    assert info.state == "draining!" and not info.drained_by_hpclz
    assert "cc2" not in select([info], drain=True).retest

    release.touch()
    code, followed = nodes(run_cli, "status", zone, power_cluster, "-p", "hpc", "-w", "cc2", "--wait", "60")
    assert code == 0, followed
    assert client.job_states([job])[job] == "COMPLETED"
    assert out.read_text().strip() == "finished"  # the job ran to its end, it was not killed
    assert "cc2" in suspended(power_cluster)


def test_dry_run_changes_nothing(run_cli: Run, zone: Path, power_cluster: LocalSlurm) -> None:
    code, shown = nodes(run_cli, "roll", zone, power_cluster, "-p", "hpc", "-w", "cc4,cc3", "--dry-run")
    assert code == 0 and shown["result"]["dry_run"]
    # One hostlist, as Slurm's own formatter writes it, however many nodes roll.
    assert "scontrol update NodeName=cc[3-4] State=POWER_DOWN_ASAP" in shown["result"]["command"]
    assert [(n["name"], n["phase"]) for n in shown["result"]["nodes"]] == [("cc3", "up"), ("cc4", "up")]
    assert power_cluster.node_states()["cc3"] == power_cluster.node_states()["cc4"] == "idle"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([], "nodes roll: name what to roll: --partition NAME, --nodes HOSTLIST, or --all"),
        (["--all"], "st1: partition static has SuspendTime=INFINITE (no power saving)"),  # --all takes static too
        (["-p", "nope"], "--partition nope: not a partition of"),
        (["-p", "hpc", "-w", "st1"], "--nodes st1: not in partition(s) hpc: st1"),
        (["-p", "hpc", "-w", "cc5"], "cc5: SuspendExcNodes keeps it powered up"),
        (["-p", "static"], "st1: partition static has SuspendTime=INFINITE (no power saving)"),
        # Selected through hpc, which has power saving; its other partition, static, turns it off.
        (["-p", "hpc", "-w", "cc6"], "cc6: partition static has SuspendTime=INFINITE (no power saving)"),
    ],
)
def test_refused_with_one_line_and_nothing_changed(
    run_cli: Run, zone: Path, power_cluster: LocalSlurm, args: list[str], said: str
) -> None:
    before = power_cluster.node_states()
    done = run_cli("nodes", "roll", str(zone), "--slurm-conf", str(power_cluster.conf), *args)
    assert done.exit_code == 64
    assert said in done.stderr and len(done.stderr.strip().splitlines()) <= 2  # error line, and its hint
    assert "Traceback" not in done.stderr
    assert power_cluster.node_states() == before


def test_refused_where_slurm_has_no_power_saving(run_cli: Run, tmp_path: Path, slurm_cluster: LocalSlurm) -> None:
    """The shared test cluster has none: Slurm itself answers `scontrol update State=POWER_DOWN_ASAP` there with
    "slurm_update error: Invalid node state specified" (Slurm 22.05.8, captured here); hpclz says why first."""
    zone = zone_with(tmp_path, "debug", "gpu")
    done = run_cli("nodes", "roll", str(zone), "--slurm-conf", str(slurm_cluster.conf), "-p", "debug")
    assert done.exit_code == 64
    assert "Slurm here has no power saving (SuspendProgram or ResumeProgram not set)" in done.stderr
    assert all(not s.startswith("drain") for s in slurm_cluster.node_states().values())


def zone_with_racks(tmp_path: Path) -> Path:
    """ai-training whole, its GB300 rack partition named after the test cluster's `static`, its H100 one after `hpc`
    (node cc6 is in both)."""
    text = (REPO / "configs" / "ai-training.yaml").read_text()
    text = re.sub(r"\bh100\b", "hpc", re.sub(r"\bgb300\b", "static", text))
    path = tmp_path / "racks.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("args", "rack"),
    [
        (["-p", "static"], "static"),  # named: refused before Slurm is asked
        (["--all"], "static"),
        (["-p", "hpc", "-w", "cc6"], "static"),  # selected through hpc, but also a node of the rack partition
    ],
)
def test_a_rack_partition_is_refused_with_the_whole_rack_path(
    run_cli: Run, tmp_path: Path, power_cluster: LocalSlurm, args: list[str], rack: str
) -> None:
    """hpclz-topology keeps the rack partitions out of power saving (SuspendExcParts, as cyclecloud-slurm's README
    asks, Azure/cyclecloud-slurm@50e6739 README.md l.375-379) and scale_m1 brings racks up whole: a node rolled alone
    would come back in a part rack. The refusal says what to do instead, in one line."""
    zone = zone_with_racks(tmp_path)
    before = power_cluster.node_states()
    done = run_cli("nodes", "roll", str(zone), "--slurm-conf", str(power_cluster.conf), *args)
    assert done.exit_code == 64, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert f"cannot roll, nothing was changed: partition {rack} is rack-scale" in done.stderr
    assert f"scale_m1 create_reservation -p {rack} (" in done.stderr and "scale_m1 power_up --racks 2;" in done.stderr
    assert "release the nodes that came up from the scale_m1 reservation" in done.stderr
    assert power_cluster.node_states() == before


def test_a_plain_partition_still_rolls_beside_a_rack_partition(
    run_cli: Run, tmp_path: Path, power_cluster: LocalSlurm
) -> None:
    code, shown = nodes(
        run_cli, "roll", zone_with_racks(tmp_path), power_cluster, "-p", "hpc", "-w", "cc2", "--dry-run"
    )
    assert code == 0, shown
    assert "scontrol update NodeName=cc2 State=POWER_DOWN_ASAP" in shown["result"]["command"]
