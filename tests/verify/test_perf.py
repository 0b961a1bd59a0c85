"""Perf tier: what is measured where, nvbandwidth and DCGM parsing, and honest "not measured" without a GPU."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from hpclz.verify import perf
from hpclz.verify.probes.source import Source
from tests.conftest import require
from tests.verify.helpers import GOOD, agent, by_id

# The CPU build of torch warns when numpy is absent; hpclz never needs numpy.
pytestmark = pytest.mark.filterwarnings("ignore:Failed to initialize NumPy:UserWarning")

# The layout nvbandwidth prints (NVIDIA/nvbandwidth README): one matrix per testcase, CPU row, GPU columns.
NVBANDWIDTH = """nvbandwidth Version: v0.4
Built from Git version: v0.4

NOTE: This tool reports current measured bandwidth on your system.
Device 0: NVIDIA H200
Device 1: NVIDIA H200

Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0         1
 0     55.21     31.02

SUM host_to_device_memcpy_ce 86.23

Running device_to_host_memcpy_ce.
memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)
           0         1
 0     55.37     55.29

SUM device_to_host_memcpy_ce 110.66
"""


def test_nvbandwidth_matrices_give_one_figure_per_gpu() -> None:
    assert perf.parse_nvbandwidth(NVBANDWIDTH) == {"h2d_gbps": [55.21, 31.02], "d2h_gbps": [55.37, 55.29]}


def test_nvbandwidth_replaces_the_host_device_figures_when_installed(tmp_path: Path) -> None:
    (tmp_path / "fixtures.base").write_text(str(GOOD))
    (tmp_path / "nvbandwidth.txt").write_text(NVBANDWIDTH)
    reading = perf.measure(Source(tmp_path, node="n1"))
    assert reading.value is not None
    assert reading.value["h2d_gbps"] == {"values": [55.21, 31.02], "method": "nvbandwidth"}
    check = by_id(agent(tmp_path))["HPCLZ-VFY-022"]
    assert (
        check["status"] == "fail"
        and "GPU 1 (00000002:00:00.0): h2d_gbps 31.02 GB/s < 48 GB/s (nvbandwidth)" in check["message"]
    )


def test_dcgm_failures_in_both_json_layouts() -> None:
    v3 = {
        "DCGM GPU Diagnostic": {
            "test_categories": [
                {
                    "category": "Deployment",
                    "tests": [
                        {"name": "Denylist", "results": [{"status": "Pass"}]},
                        {
                            "name": "Inforom",
                            "results": [{"gpu_id": "3", "status": "Fail", "warnings": [{"warning": "bad inforom"}]}],
                        },
                    ],
                }
            ]
        }
    }
    v4 = {"tests": [{"name": "software", "results": [{"entity_id": 1, "status": "Fail", "info": ["libcuda missing"]}]}]}
    assert perf.dcgm_failures(v3) == ["Inforom GPU 3: bad inforom"]
    assert perf.dcgm_failures(v4) == ["software GPU 1: libcuda missing"]
    assert perf.dcgm_failures({"tests": [{"name": "x", "results": [{"status": "Pass"}]}]}) == []


def test_live_perf_measures_every_gpu_or_says_no_cuda_device() -> None:
    require(importlib.util.find_spec("torch") is not None, "torch")
    import torch

    reading = perf.measure(Source(None, node="here"))
    if torch.cuda.is_available():  # on a GPU machine the same call measures every GPU
        assert reading.value is not None
        assert len(reading.value["gemm_bf16_tflops"]["values"]) == torch.cuda.device_count()
    else:
        assert reading.value is None and reading.why.startswith("no CUDA device")


def test_a_live_health_run_on_this_machine_finishes_and_names_what_is_missing() -> None:
    from hpclz.verify.agent import run_agent

    report = run_agent(sku="Standard_ND96isr_H200_v5", tier="perf")
    checks = by_id(report)
    assert checks["HPCLZ-VFY-020"]["message"].startswith("not measured: ")
    assert checks["HPCLZ-VFY-023"]["message"].startswith("not measured: dcgmi")
    assert all(c["status"] in ("pass", "warn", "fail", "not_measured") for c in report["checks"])
