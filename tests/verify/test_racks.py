"""Judging rack runs (hpclz.verify.collective_job) from their results, without Slurm; the runs themselves are in
tests/verify/test_racks_slurm.py."""

from __future__ import annotations

from hpclz.verify import collective_job as coll
from hpclz.verify.model import BandwidthPoint, CollectiveResult, Status
from hpclz.verify.thresholds import load_thresholds


def _run(name: str, busbw: float | None, nodes: int = 18) -> CollectiveResult:
    points = (
        [] if busbw is None else [BandwidthPoint(size_bytes=8 << 30, time_us=1.0, algbw_gbps=1.0, busbw_gbps=busbw)]
    )
    return CollectiveResult(
        name=name, nodes=[f"{name}-{i}" for i in range(nodes)], backend="nccl", ranks=4 * nodes, points=points
    )


def test_racks_are_the_healthy_nodes_of_each_block_with_two_or_more() -> None:
    racks = {"nvl_b": ["gb3", "gb4", "gb5"], "nvl_a": ["gb1", "gb2"], "nvl_c": ["gb6"]}
    assert coll.rack_groups(racks, ["gb1", "gb2", "gb3", "gb5", "gb6"]) == {
        "rack-nvl_a": ["gb1", "gb2"],
        "rack-nvl_b": ["gb3", "gb5"],
    }


def test_a_rack_under_the_per_rack_threshold_is_slow_and_named_as_a_rack() -> None:
    # GB300's per-rack floor: the drain level of Microsoft's intra-rack MNNVL baseline (thresholds.json).
    floor = load_thresholds("Standard_ND128isr_GB300_v6", {}).get("rack_allreduce_busbw_gbps")
    assert floor == 600
    fast, slow, silent = _run("rack-nvl_a", 930.0), _run("rack-nvl_b", 410.0), _run("rack-nvl_c", None)
    assert coll.analyse_racks([fast, slow, silent], floor) == [slow, silent]
    assert (fast.status, slow.status, silent.status) == (Status.PASS, Status.FAIL, Status.FAIL)
    assert slow.message == "bus bandwidth 410 GB/s < 600 GB/s"
    assert coll.name_rack(slow, [], {}) == "rack nvl_b (18 nodes): bus bandwidth 410 GB/s < 600 GB/s"
    assert coll.name_rack(slow, [_run("pair-x-y", 1.0, 2)], {"nvl_b-3": "slow"}) is None


def test_without_a_threshold_a_rack_is_slow_only_beside_a_faster_one() -> None:
    (alone,) = [_run("rack-nvl_a", 10.0)]
    assert coll.analyse_racks([alone], None) == [] and alone.status is Status.PASS
    fast, slow = _run("rack-nvl_a", 100.0), _run("rack-nvl_b", 40.0)
    assert coll.analyse_racks([fast, slow], None) == [slow]
    assert slow.message == "bus bandwidth 40 GB/s < 50 GB/s (half the best rack's 100)"
