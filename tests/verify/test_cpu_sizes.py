"""A CPU HPC size (Standard_HB120rs_v3) through the agent: real STREAM and ib_write_bw outputs
(microsoft/superbenchmark test data, corpus/PROVENANCE.md) judged against aznhc's HBv3 figures."""

from __future__ import annotations

from pathlib import Path

from hpclz.verify.probes.bench import parse_ib_write_bw, parse_stream
from tests.verify.helpers import FIXTURES, HBV3, agent, by_id

BENCH = FIXTURES / "corpus" / "bench"


def test_stream_table_is_read_per_kernel() -> None:
    parsed = parse_stream((BENCH / "superbench-streamResultZen.log").read_text())
    assert parsed == {
        "rates": {"Copy": 342008.3, "Scale": 342409.6, "Add": 343827.7, "Triad": 363208.7},
        "validated": True,
        "threads": 32,
    }


def test_ib_write_bw_mib_per_second_is_converted_to_gigabits() -> None:
    # perftest: MB/sec divides by 0x100000, Gb/sec by 125000000 (src/perftest_parameters.c).
    gbps = parse_ib_write_bw((BENCH / "superbench-ib_loopback_8M_size.log").read_text())
    assert gbps is not None and round(gbps, 2) == round(24056.72 * 1048576 / 125e6, 2) == 201.8
    report_gbits = (FIXTURES / "h200-good" / "ib_write_bw-mlx5_ib0.txt").read_text()
    assert parse_ib_write_bw(report_gbits) == 397.42


def test_the_hbv3_node_passes_every_check_its_size_has_figures_for() -> None:
    checks = by_id(agent(HBV3))
    judged = {cid: c["status"] for cid, c in checks.items() if c["status"] != "not_measured"}
    assert judged == dict.fromkeys(
        ["HPCLZ-VFY-006", "HPCLZ-VFY-011", "HPCLZ-VFY-012", "HPCLZ-VFY-013", "HPCLZ-VFY-014", "HPCLZ-VFY-015",
         "HPCLZ-VFY-024", "HPCLZ-VFY-025"],
        "pass",
    )  # fmt: skip
    assert "expects no GPU" in checks["HPCLZ-VFY-001"]["message"]
    assert checks["HPCLZ-VFY-025"]["message"] == "1 HCAs, slowest 201.8 Gb/s >= 190 Gb/s from host memory"


def test_a_slow_real_stream_run_fails_on_hbv3() -> None:
    checks = by_id(agent(FIXTURES / "hbv3-faults" / "stream-slow"))
    assert checks["HPCLZ-VFY-024"]["status"] == "fail" and checks["HPCLZ-VFY-024"]["nhc_code"] == "NHC2001"
    assert "Triad 105256.0 MB/s" in checks["HPCLZ-VFY-024"]["message"]
    assert [cid for cid, c in checks.items() if c["status"] == "fail"] == ["HPCLZ-VFY-024"]


def test_benchmarks_the_size_requires_fail_when_they_cannot_run(tmp_path: Path) -> None:
    # No stream binary, no perftest: the HBv4-class question "how fast is its memory" has no answer, so it fails.
    (tmp_path / "fixtures.base").write_text(str(HBV3))
    (tmp_path / "stream.txt").write_text("")
    (tmp_path / "ib_write_bw-mlx5_ib0.txt").write_text("")
    checks = by_id(agent(tmp_path))
    assert checks["HPCLZ-VFY-024"]["status"] == "fail"
    assert checks["HPCLZ-VFY-024"]["message"] == "could not measure: STREAM: not installed: no fixture stream.txt"
    assert checks["HPCLZ-VFY-025"]["status"] == "fail"
    assert "mlx5_ib0: not installed" in checks["HPCLZ-VFY-025"]["message"]
