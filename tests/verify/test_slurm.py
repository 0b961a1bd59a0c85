"""The Slurm adapter against real daemons on localhost (tests/support/slurm.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpclz.slurm.client import SlurmClient, SlurmError
from hpclz.verify.dispatch import wait_for_jobs
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm

slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm

pytestmark = pytest.mark.slurm


@pytest.fixture
def client(clean_slurm: LocalSlurm) -> SlurmClient:
    return SlurmClient(conf=clean_slurm.conf, extra_env=clean_slurm.job_env)


def test_lists_every_node_idle_with_its_partition(client: SlurmClient) -> None:
    nodes = {n.name: n for n in client.nodes(partition="debug")}
    assert sorted(nodes) == ["node1", "node2", "node3", "node4"]
    assert all(n.state == "idle" and n.schedulable and n.partitions == ("debug",) for n in nodes.values())
    assert [n.name for n in client.nodes(nodelist="node[2-3]")] == ["node2", "node3"]


def test_expands_hostlists_with_slurms_parser(client: SlurmClient) -> None:
    assert client.expand("node[1-3],gpu[007-008]") == ["node1", "node2", "node3", "gpu007", "gpu008"]


def test_drain_prefixes_the_reason_and_resume_clears_it(client: SlurmClient, clean_slurm: LocalSlurm) -> None:
    client.drain("node2", "HPCLZ-VFY-006 Xid 79 (GPU has fallen off the bus)")
    info = {n.name: n for n in client.nodes()}["node2"]
    assert info.state == "drained"
    assert info.reason == "hpclz: HPCLZ-VFY-006 Xid 79 (GPU has fallen off the bus)"
    assert info.drained_by_hpclz and not info.schedulable
    client.resume("node2")
    clean_slurm.wait_idle(["node2"], timeout=10)  # idle* for a moment: slurmctld pings a resumed node first
    assert {n.name: n for n in client.nodes()}["node2"].reason == ""


def test_a_reservation_lets_a_job_run_on_a_resumed_node_and_keeps_others_off(
    client: SlurmClient, tmp_path: Path
) -> None:
    client.drain("node3", "earlier failure")
    client.reserve("hpclz-test", ["node3"], minutes=5)
    client.resume("node3")
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\nsrun hostname\n")
    inside = client.sbatch(
        script, nodes=["node3"], job_name="in", time_limit_s=60, output=tmp_path / "in.out", reservation="hpclz-test"
    )
    outside = client.sbatch(script, nodes=["node3"], job_name="out", time_limit_s=60, output=tmp_path / "out.out")
    assert wait_for_jobs(client, [inside], start_within_s=30, finish_within_s=30) == {}
    assert client.job_states([outside])[outside] == "PENDING"  # the reserved node takes no other job
    client.cancel([outside])
    client.unreserve("hpclz-test")


def test_refusals_name_the_command_and_slurms_words(client: SlurmClient, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    with pytest.raises(SlurmError, match=r"sbatch refused job x on nosuchnode: .*"):
        client.sbatch(script, nodes=["nosuchnode"], job_name="x", time_limit_s=60, output=tmp_path / "o")
    with pytest.raises(SlurmError, match="scontrol update NodeName=nosuchnode"):
        client.resume("nosuchnode")


def test_a_missing_slurm_conf_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SlurmError, match=r"slurm.conf not found: .*nope.conf"):
        SlurmClient.from_env(tmp_path / "nope.conf")


def test_a_missing_binary_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SlurmError, match="Slurm's sinfo not found in"):
        SlurmClient(bin_dir=tmp_path).nodes()


def test_binaries_and_conf_come_from_the_environment(
    clean_slurm: LocalSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sinfo = Path(clean_slurm.client("sh", "-c", "command -v sinfo").strip())
    monkeypatch.setenv("HPCLZ_SLURM_BIN", str(sinfo.parent))
    monkeypatch.setenv("SLURM_CONF", str(clean_slurm.conf))
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing found through PATH: the folder setting is what works
    client = SlurmClient.from_env()
    assert client.bin_dir == sinfo.parent and client.conf == clean_slurm.conf
    assert len(client.nodes(partition="debug")) == 4


def test_a_node_in_a_maintenance_reservation_is_not_schedulable(client: SlurmClient) -> None:
    # Slurm 22.05 here shows the node "idle" for a few seconds, then "maint" (scontrol: IDLE+MAINTENANCE+RESERVED),
    # as corpus/slurm/maint-reservation.txt records.
    import getpass
    import time

    client.run(
        "scontrol", "create", "reservation", "ReservationName=hpclz-maint", "StartTime=now", "Duration=5",
        f"Users={getpass.getuser()}", "Nodes=node4", "Flags=MAINT",
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while (info := {n.name: n for n in client.nodes()}["node4"]).state == "idle" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert info.state == "maint" and not info.schedulable and not info.unreachable
    finally:
        client.run("scontrol", "delete", "ReservationName=hpclz-maint")
