"""Bus bandwidth math, the nccl-tests parser, and a real two-process torch.distributed all-reduce (gloo)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from hpclz.verify import nccl
from hpclz.verify.model import CollectiveResult, Status
from tests.conftest import require
from tests.verify.helpers import FAULTS, GOOD

# The CPU build of torch warns when numpy is absent; hpclz never needs numpy.
pytestmark = pytest.mark.filterwarnings("ignore:Failed to initialize NumPy:UserWarning")


def test_bus_factor_is_two_n_minus_one_over_n() -> None:
    assert nccl.bus_factor(2) == 1.0
    assert nccl.bus_factor(8) == pytest.approx(1.75)
    assert nccl.busbw(100.0, 4) == pytest.approx(150.0)
    assert nccl.bus_factor(1) == 0.0  # one rank moves no data (baseline-bench.json: ~13 us at any size)


def test_point_derives_algbw_and_busbw_from_size_and_time() -> None:
    p = nccl.point(2**30, 0.004, 8)
    assert p["algbw_gbps"] == pytest.approx(2**30 / 0.004 / 1e9, rel=1e-6)
    assert p["busbw_gbps"] == pytest.approx(p["algbw_gbps"] * 1.75, rel=1e-6)
    assert p["time_us"] == pytest.approx(4000)


def test_sizes_parse_with_binary_units() -> None:
    assert [nccl.parse_size(s) for s in ("1024", "256K", "16M", "16G")] == [1024, 2**18, 2**24, 2**34]
    with pytest.raises(ValueError, match="bad message size"):
        nccl.parse_size("16 gigs")


def test_all_reduce_perf_output_parses_to_points_ranks_and_footer() -> None:
    parsed = nccl.parse_all_reduce_perf((GOOD / "all_reduce_perf.txt").read_text())
    (top,) = parsed["points"]
    assert top["size_bytes"] == 17179869184 and top["busbw_gbps"] == pytest.approx(478.9)
    assert top["busbw_gbps"] == pytest.approx(nccl.busbw(top["algbw_gbps"], 8), rel=1e-3)
    assert (parsed["ranks"], parsed["wrong"], parsed["avg_busbw_gbps"]) == (8, 0, pytest.approx(478.9))


def test_older_all_reduce_perf_rows_without_a_root_column_parse() -> None:
    row = "   1073741824     268435456     float     sum    6421.1  167.22  292.63  0    6418.9  167.28  292.74  0\n"
    (p,) = nccl.parse_all_reduce_perf(row)["points"]
    assert (p["size_bytes"], p["algbw_gbps"], p["busbw_gbps"]) == (1073741824, 167.22, 292.63)


def test_result_judges_the_largest_size_against_the_threshold() -> None:
    small_and_slow = nccl.point(2**20, 0.001, 8)  # ~1.8 GB/s busbw: small messages never reach peak
    large = nccl.point(2**34, 0.07, 8)  # 2^34 B / 0.07 s x 1.75 = 429.5 GB/s busbw
    assert large["busbw_gbps"] == pytest.approx(429.5, abs=0.1)
    passed = CollectiveResult.model_validate(
        nccl.result("intranode", ["n1"], "nccl", 8, [small_and_slow, large], 400.0)
    )
    failed = CollectiveResult.model_validate(
        nccl.result("intranode", ["n1"], "nccl", 8, [small_and_slow, large], 450.0)
    )
    assert (passed.status, failed.status) == (Status.PASS, Status.FAIL)
    assert "429.5 GB/s" in failed.message and "< 450" in failed.message
    assert nccl.result("x", [], "gloo", 2, [], None, "ranks crashed")["status"] == "fail"


def test_fixture_run_of_nccl_tests_becomes_a_collective_result() -> None:
    from hpclz.verify.probes.source import Source

    reading = nccl.intranode(Source(FAULTS / "nccl-slow", node="n1"), 8, 431.0)
    run = CollectiveResult.model_validate(reading.value)
    assert (run.backend, run.ranks, run.status, run.nodes) == ("nccl-tests", 8, Status.FAIL, ["n1"])
    assert "152.4" in run.message and "431" in run.message


def test_gloo_all_reduce_across_two_local_processes(tmp_path: Path) -> None:
    require(importlib.util.find_spec("torch") is not None, "torch")
    import torch.distributed as dist

    require(dist.is_available() and dist.is_gloo_available(), "torch.distributed with gloo")
    out = tmp_path / "allreduce.json"
    sizes = [4096, 1 << 20]
    why = nccl.spawn_local(2, "gloo", sizes, out, name="local-pair", threshold=None, timeout_s=120, iters=3, warmup=1)
    assert why == ""
    run = CollectiveResult.model_validate(json.loads(out.read_text()))
    assert (run.name, run.backend, run.ranks, len(run.nodes)) == ("local-pair", "gloo", 2, 1)
    assert [p.size_bytes for p in run.points] == sizes
    for p in run.points:
        assert p.time_us > 0 and p.algbw_gbps > 0
        assert p.algbw_gbps == pytest.approx(p.size_bytes / (p.time_us * 1e-6) / 1e9, rel=1e-3)
        assert p.busbw_gbps == pytest.approx(p.algbw_gbps * nccl.bus_factor(2), rel=1e-6)
    assert run.status is Status.WARN and "no busbw threshold" in run.message


def test_a_failing_rank_is_reported_by_its_last_line(tmp_path: Path) -> None:
    why = nccl.spawn_local(1, "gloo", [-1], tmp_path / "x.json", name="x", threshold=None, timeout_s=60)
    assert why == (
        "rank 0 exited 2: python -m hpclz.verify.nccl: error: bad message size '-1': use bytes or K/M/G, e.g. 16G"
    )


def test_each_iteration_hook_runs_once_per_timed_call_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook collective_job's throttle uses: inside the timed loop, never during warm-up."""
    from tests.support.local_http import free_ports

    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_ports(1)[0]))
    calls: list[int] = []
    run = nccl.run_allreduce(
        [4096, 8192], "gloo", iters=3, warmup=2, timeout_s=30, each_iteration=lambda: calls.append(1)
    )
    assert run is not None and run["ranks"] == 1 and [p["size_bytes"] for p in run["points"]] == [4096, 8192]
    assert len(calls) == 2 * 3
