"""Remediation end to end: faults planted from verify's fixture folders, a real slurmctld, the real SDK clients
against the ARM stand-in's restart, reimage and Impact Reporting endpoints."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hpclz.remediate.engine import Policy, Remediator
from hpclz.remediate.model import Stage
from hpclz.slurm.client import REPAIR_PREFIX, SlurmClient
from tests.support import slurm as harness
from tests.support.arm_standin import ArmStandIn
from tests.support.remediation import CLUSTER, FAULTS, GOOD, RG, Fleet, remediator
from tests.support.slurm import LocalSlurm

slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin


@pytest.fixture
def slurm(clean_slurm: LocalSlurm) -> SlurmClient:
    return SlurmClient(conf=clean_slurm.conf, extra_env=clean_slurm.job_env)


@pytest.fixture
def fleet(tmp_path: Path, arm: ArmStandIn, clean_slurm: LocalSlurm) -> Fleet:
    fleet = Fleet(tmp_path / "fleet")
    for node in clean_slurm.nodes:
        fleet.nodes[node] = arm.compute.add(RG, node, {"ClusterName": CLUSTER, "Name": node})
        fleet.plant(node, GOOD)
    arm.repairs.on_action = fleet.after_action
    return fleet


def engine(tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn, **policy: Any) -> Remediator:
    return remediator(
        tmp_path / "state", fleet.world_file, slurm, arm.subscription_id, Policy(**{"max_out_percent": 50, **policy})
    )


def info(slurm: SlurmClient, node: str) -> tuple[str, str]:
    [found] = slurm.nodes(nodelist=node)
    return found.state, found.reason


def actions(arm: ArmStandIn, fleet: Fleet, node: str) -> list[str]:
    return arm.repairs.log.of(fleet.nodes[node])


# fault folder, what repair leaves the node reading (in order), terminal stage, Azure actions, GHR category
CASES = {
    "xid79": ([], Stage.RETIRED, [], "Resource.Hpc.Unhealthy.XID79FallenOffBus"),
    "row-remap-failure": ([], Stage.RETIRED, [], "Resource.Hpc.Unhealthy.HpcRowRemapFailure"),
    "ib-link-flapping": ([], Stage.RETIRED, [], "Resource.Hpc.Unhealthy.IBPortFlapping"),
    "ib-port-down-cleared": (["good"], Stage.RETURNED, ["restart"], None),
    "ib-port-down": (["ib-port-down"], Stage.RETIRED, ["restart"], "Resource.Hpc.Unhealthy.IBPortDown"),
    "gpu-missing": (["gpu-missing"], Stage.RETIRED, ["restart"], "Resource.Hpc.Unhealthy.HpcMissingGpu"),
    "nvsmi-hung": (["good"], Stage.RETURNED, ["restart"], None),
    "swap-on": (["swap-on", "good"], Stage.RETURNED, ["restart", "reimage"], None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_fault_reaches_its_terminal_action(
    case: str, tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn
) -> None:
    after, terminal, azure_actions, category = CASES[case]
    fault = case.removesuffix("-cleared")
    fleet.plant("node2", FAULTS / fault, [GOOD if a == "good" else FAULTS / a for a in after])
    remediate = engine(tmp_path, fleet, slurm, arm)
    [incident] = remediate.observe(fleet.reports("node1", "node2", "node3"))
    remediate.run()
    done = remediate.store.load().incidents[incident.id]
    assert done.stage == terminal, done
    assert actions(arm, fleet, "node2") == azure_actions
    state, reason = info(slurm, "node2")
    if terminal == Stage.RETIRED:
        assert state == "drained" and reason.startswith(f"{REPAIR_PREFIX} {incident.id} retired: {category}")
        [impact] = arm.repairs.log.impacts.values()
        assert impact["properties"]["impactCategory"] == category
        assert impact["properties"]["impactedResourceId"] == fleet.nodes["node2"]
        assert impact["properties"]["additionalProperties"]["VmUniqueId"]
        assert done.evidence[0].check_id in impact["properties"]["impactDescription"]
    else:
        assert state.startswith("idle") and reason == ""
        assert arm.repairs.log.impacts == {}
    assert {n: info(slurm, n)[0] for n in ("node1", "node3", "node4")} == dict.fromkeys(
        ("node1", "node3", "node4"), "idle"
    )


def test_events_record_every_transition_in_order(
    tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn
) -> None:
    fleet.plant("node3", FAULTS / "ib-port-down", [FAULTS / "ib-port-down"])
    remediate = engine(tmp_path, fleet, slurm, arm)
    remediate.observe(fleet.reports("node3"))
    remediate.run()
    steps = [(e.stage_from.value, e.stage_to.value, e.action) for e in remediate.store.events()]
    assert steps == [
        ("detected", "detected", None),
        ("detected", "drained", None),
        ("drained", "acting", None),
        ("acting", "checking", "reboot"),
        ("checking", "acting", None),
        ("acting", "retired", "report"),
    ]
    lines = (tmp_path / "state" / "events.jsonl").read_text().splitlines()
    assert len(lines) == len(steps) and all(line.startswith("{") for line in lines)


def test_a_node_healthagent_drained_is_left_to_it(
    tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn, clean_slurm: LocalSlurm
) -> None:
    # healthagent's own reason (Azure/cyclecloud-healthagent healthagent/etc/health.sh.example @3c7e2da)
    theirs = "Healthcheck failures. Run 'health -s' view health report."
    clean_slurm.client("scontrol", "update", "NodeName=node4", "State=DRAIN", f"Reason={theirs}")
    fleet.plant("node4", FAULTS / "xid79")
    remediate = engine(tmp_path, fleet, slurm, arm)
    [incident] = remediate.observe(fleet.reports("node4"))
    remediate.run()
    done = remediate.store.load().incidents[incident.id]
    assert done.stage == Stage.DEFERRED and "healthagent" in done.note
    assert info(slurm, "node4") == ("drained", theirs)
    assert actions(arm, fleet, "node4") == [] and arm.repairs.log.impacts == {}


def test_a_node_re_drained_by_someone_else_during_repair_is_not_resumed(
    tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn, clean_slurm: LocalSlurm
) -> None:
    fleet.plant("node1", FAULTS / "nvsmi-hung", [GOOD])
    remediate = engine(tmp_path, fleet, slurm, arm)
    [incident] = remediate.observe(fleet.reports("node1"))
    while remediate.store.load().incidents[incident.id].stage != Stage.RETURNING:
        assert remediate.step(incident.id) is not None
    clean_slurm.client("scontrol", "update", "NodeName=node1", "State=DRAIN", "Reason=admin: bios update")
    remediate.run()
    done = remediate.store.load().incidents[incident.id]
    assert done.stage == Stage.RETURNED and "admin: bios update" in done.note
    assert info(slurm, "node1") == ("drained", "admin: bios update")


def test_the_disruption_budget_holds_the_second_node_until_the_first_is_back(
    tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn
) -> None:
    for node in ("node1", "node2"):
        fleet.plant(node, FAULTS / "nvsmi-hung", [GOOD])
    remediate = engine(tmp_path, fleet, slurm, arm, max_out_percent=25)  # 1 of the partition's 4 nodes
    first, second = remediate.observe(fleet.reports("node1", "node2"))
    for incident in (first, second):  # both drained at once: a faulty node never waits for the budget
        remediate.step(incident.id)
        remediate.step(incident.id)
    assert remediate.step(first.id) is not None  # reboot
    assert remediate.step(second.id) is None
    held = remediate.store.load().incidents[second.id]
    assert held.stage == Stage.ACTING and held.note == "waiting: 1 of 1 nodes allowed out for repair in partition debug"
    assert info(slurm, "node2")[0] == "drained" and actions(arm, fleet, "node2") == []
    remediate.run()
    states = {i.node: i.stage for i in remediate.store.load().incidents.values()}
    assert states == {"node1": Stage.RETURNED, "node2": Stage.RETURNED}
    assert actions(arm, fleet, "node1") == actions(arm, fleet, "node2") == ["restart"]


def test_a_third_strike_in_the_window_is_reported_without_a_reboot(
    tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn
) -> None:
    now = datetime(2026, 11, 27, tzinfo=UTC)
    clock = iter(now + timedelta(hours=h) for h in range(1000))
    remediate = engine(tmp_path, fleet, slurm, arm)
    remediate.clock = lambda: next(clock)
    for _strike in range(2):
        fleet.plant("node2", FAULTS / "nvsmi-hung", [GOOD])
        remediate.observe(fleet.reports("node2"))
        remediate.run()
    fleet.plant("node2", FAULTS / "nvsmi-hung", [GOOD])
    [third] = remediate.observe(fleet.reports("node2"))
    remediate.run()
    done = remediate.store.load().incidents[third.id]
    assert done.stage == Stage.RETIRED and done.ladder == ["report"] and done.note.startswith("strike 3 in 7 days")
    assert actions(arm, fleet, "node2") == ["restart", "restart"]


def test_a_dry_run_changes_nothing_and_says_what_it_would_do(
    tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn
) -> None:
    fleet.plant("node2", FAULTS / "xid79")
    remediate = engine(tmp_path, fleet, slurm, arm)
    assert len(remediate.observe(fleet.reports("node2"))) == 1
    before = (tmp_path / "state" / "state.json").read_text()
    dry = engine(tmp_path, fleet, slurm, arm, dry_run=True)
    planned = dry.run()
    assert [(e.stage_to.value, e.dry_run) for e in planned] == [("drained", True)]
    assert (tmp_path / "state" / "state.json").read_text() == before
    assert info(slurm, "node2") == ("idle", "")
    assert len(dry.store.events()) == 1  # only the detection the real run logged


def _fresh(tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn, harness_slurm: LocalSlurm) -> Remediator:
    harness_slurm.reset_nodes()
    arm.repairs.log.actions.clear()
    arm.repairs.log.impacts.clear()
    fleet.plant("node2", FAULTS / "ib-port-down", [FAULTS / "ib-port-down"])
    remediate = engine(tmp_path, fleet, slurm, arm)
    remediate.observe(fleet.reports("node2"))
    return remediate


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kill_9_before_every_save_resumes_to_the_same_end(
    tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn, clean_slurm: LocalSlurm
) -> None:
    """The remediator runs in its own process and is killed (SIGKILL) just after each action and before the
    save that records it; a fresh remediator then finishes. Every run must end as an unbroken one does."""
    env = {**os.environ, **clean_slurm.job_env, "PYTHONPATH": str(ROOT)}
    died_at: list[int] = []
    for die_at in range(1, 20):
        state = tmp_path / f"run{die_at}"
        remediate = _fresh(state, fleet, slurm, arm, clean_slurm)
        child = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.remediate.crash_child",
                str(state / "state"),
                str(fleet.world_file),
                str(die_at),
            ],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if child.returncode == 0:
            break
        assert child.returncode == -9, child.stderr
        died_at.append(die_at)
        remediate.run()
        [done] = remediate.store.load().incidents.values()
        assert done.stage == Stage.RETIRED, (die_at, done)
        assert done.category == "Resource.Hpc.Unhealthy.IBPortDown"
        assert info(slurm, "node2")[1].startswith(f"{REPAIR_PREFIX} {done.id} retired")
        assert set(arm.repairs.log.impacts) == {done.report_name.lower()}  # one report, however often PUT
        restarts = actions(arm, fleet, "node2")
        assert restarts in (["restart"], ["restart", "restart"]), (die_at, restarts)
        stages = [e.stage_to for e in remediate.store.events()]
        assert stages[-1] == Stage.RETIRED
    assert died_at == list(range(1, len(died_at) + 1)) and len(died_at) >= 5  # every save of the run was a kill point


def test_the_health_report_names_the_physical_host_and_the_faulty_gpus_serial(
    tmp_path: Path, fleet: Fleet, slurm: SlurmClient, arm: ArmStandIn
) -> None:
    """ "All HPC impact requests must include either PhysicalHostName (preferred) or VmUniqueId", and a GPU fault may
    carry the GPU's SerialNumber and PCIe Location (guest-health-impact-report.md @01f777c): both come from the node's
    own verify report (Hyper-V KVP pool 3, nvidia-smi's <serial>)."""
    reads = tmp_path / "xid79-on-azure"
    reads.mkdir()
    (reads / "fixtures.base").write_text(str(FAULTS / "xid79"))
    (reads / "kvp_pool_3").write_bytes((ROOT / "tests/verify/fixtures/kvp/kvp_pool_3").read_bytes())
    fleet.plant("node2", reads)
    remediate = engine(tmp_path, fleet, slurm, arm)
    [incident] = remediate.observe(fleet.reports("node2"))
    remediate.run()
    assert remediate.store.load().incidents[incident.id].stage == Stage.RETIRED
    [impact] = arm.repairs.log.impacts.values()
    extra = impact["properties"]["additionalProperties"]
    assert extra["PhysicalHostName"] == "GGBB90904476" and extra["VmUniqueId"]
    # The Xid 79 fixture names GPU 2 (00000003:00:00.0), whose serial the H200 fixture gives as 0000000000003.
    assert (extra["SerialNumber"], extra["Location"], extra["Manufacturer"]) == (
        "0000000000003",
        "00000003:00:00.0",
        "Nvidia",
    )
